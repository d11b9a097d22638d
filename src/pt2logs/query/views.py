"""DuckDB views over the warehouse: every table is a view, dead rows hidden.

Each view reads exactly the files its snapshot's commits list (:mod:`pt2logs.store.snapshot`,
:mod:`pt2logs.query.view_sources`), selects the declared columns in declared order (NULL where no file
has one; a table with no files is an empty view of the right types) and keeps only the rows of each
run's live transaction (see :mod:`pt2logs.store.warehouse`).
"""

from __future__ import annotations

import contextlib
import os
import time
import warnings
import weakref
from typing import Any

import duckdb

from pt2logs.query import frame_fill, kept_rows
from pt2logs.query.view_sql import _commits, _statements
from pt2logs.store.recovery import gc_grace_s
from pt2logs.store.snapshot import (
    Snapshot,
    damage_warnings,
    damaged_runs_files,
    runs_file_error,
    take,
)
from pt2logs.store.warehouse import (
    Warehouse,
    WarehouseError,
)

#: how often a query is run again when a file it listed was deleted before it was read
VANISHED_RETRIES = 3
#: errors of the query's text, not of the files it read
_ASKED_WRONG = (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException)


def _vanished(e: Exception) -> bool:
    """A file listed by a query's glob was gone when the query opened it (a compaction's replaced
    files are deleted after a grace period; a query listing at that instant sees this)."""
    msg = str(e)
    return ".parquet" in msg and any(
        s in msg
        for s in (
            "No such file",
            "Cannot open file",
            "not found",
            "does not exist",
            "No files found",
        )
    )


def attach_filesystem(con: duckdb.DuckDBPyConnection, wh: Warehouse) -> None:
    """Let DuckDB read ``wh``'s object store through its fsspec filesystem, once per connection (a
    snapshot taken anew must not register it again: DuckDB refuses a second filesystem of one name)."""
    if wh.remote:
        names = wh.fs.protocol if isinstance(wh.fs.protocol, (tuple, list)) else (wh.fs.protocol,)
        if not any(con.filesystem_is_registered(n) for n in names):
            con.register_filesystem(wh.fs)


#: connections made by :func:`create_views`: their warehouse, when their snapshot was taken and the runs files
#: (the commits) there were then. Replaced files are deleted once the grace period has passed (pt2logs.store.recovery),
#: so a snapshot older than half of it is taken anew before the connection's next query; a query that ends after
#: the whole grace period, when commits landed since, is run again on a new snapshot (its files may be gone).
_SNAPSHOTS: weakref.WeakKeyDictionary[
    duckdb.DuckDBPyConnection, tuple[Warehouse, float, frozenset[str]]
] = weakref.WeakKeyDictionary()
#: per connection: (warnings about files left out, the live runs they held)
_DAMAGE: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, tuple[list[str], set[str]]] = (
    weakref.WeakKeyDictionary()
)
_TAKEN: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, Snapshot] = weakref.WeakKeyDictionary()


def snapshot_of(con: duckdb.DuckDBPyConnection) -> Snapshot:
    """The files the connection's views read, and those left out (:mod:`pt2logs.store.snapshot`)."""
    return _TAKEN[con]


def warehouse_of(con: duckdb.DuckDBPyConnection) -> Warehouse | None:
    """The warehouse whose snapshot the connection's views read (None: views made without one)."""
    got = _SNAPSHOTS.get(con)
    return got[0] if got is not None and con in _TAKEN else None


def read_warnings(con: duckdb.DuckDBPyConnection) -> list[str]:
    """What the connection's snapshot left out: each damaged or missing file of a live run, with its runs."""
    return list(_DAMAGE.get(con, ([], set()))[0])


def damaged_runs(con: duckdb.DuckDBPyConnection) -> set[str]:
    """The live runs whose stored rows are incomplete (a file of theirs is damaged or missing)."""
    return set(_DAMAGE.get(con, ([], set()))[1])


def commit_records(
    con: duckdb.DuckDBPyConnection, wh: Warehouse, runs: list[str]
) -> dict[str, Any]:
    """The commit records of ``runs`` (rel paths), from their footers in one DuckDB call."""
    from pt2logs.store.manifest import KEY, parse_record

    url = {wh.url(*r.split("/")): r for r in runs}
    try:
        rows = con.execute(
            "SELECT file_name, value FROM parquet_kv_metadata($files) WHERE key = $key",
            {"files": list(url), "key": KEY},
        ).fetchall()
        return {url[f]: parse_record(v) for f, v in rows}
    except (duckdb.Error, ValueError) as e:
        bad = damaged_runs_files(wh, runs)
        if bad:
            raise WarehouseError(runs_file_error(wh, bad)) from None
        raise e


def create_views(con: duckdb.DuckDBPyConnection, wh: Warehouse) -> None:
    """Every table as a view over a snapshot of the committed runs (see :func:`view_statements`): each
    view reads exactly the files its commits list (:mod:`pt2logs.store.snapshot`). The views, macros
    and snapshot tables are a catalog of their own, attached to ``con`` (:mod:`pt2logs.query.catalog`:
    made once per snapshot and kept in a file, so a later connection to the same snapshot only attaches it)."""
    from pt2logs.query import catalog

    attach_filesystem(con, wh)
    taken = time.monotonic()  # before the listing: the snapshot is never younger than this says
    for attempt in range(VANISHED_RETRIES + 1):
        snap = take(wh, read_records=lambda runs: commit_records(con, wh, runs))
        # files written before the frame ids: their rows filled in Python (the views call it)
        frame_fill.register(con, snap)
        try:
            catalog.attach(con, wh, snap, lambda s=snap: _statements(con, wh, True, s)[0])
            _SNAPSHOTS[con] = (wh, taken, snap.commits)
            warned, runs = damage_warnings(con, wh, snap)
            # kept rows not read (pt2logs.query.kept_rows): nothing is missing, they are asked of the rules anew
            _DAMAGE[con] = (warned + kept_rows.damaged_live(wh, snap.files.get("runs")), runs)
            _TAKEN[con] = snap
            return
        except duckdb.Error as e:
            # a file deleted under the listing, or a kept rows file whose ends are whole but not its footer
            if attempt < VANISHED_RETRIES and (_vanished(e) or kept_rows.recheck(wh)):
                continue
            bad = damaged_runs_files(wh, snap.files.get("runs", []))
            if bad:
                raise WarehouseError(runs_file_error(wh, bad)) from None
            raise


#: settings of every connection pt2logs makes. ``asof_loop_join_threshold``: DuckDB (since 1.3) turns an
#: ASOF join whose left side it estimates under 64 rows into a nested loop join; 2.0.1 estimates the
#: lookups of ``cache_pairs`` at 41 rows where a fleet has 100,000s, and ``cache_misses`` took 17 s
#: instead of 0.5 s at 10,000 runs (bench/RESULTS.md). An ASOF join of pt2logs is never that small.
SETTINGS = {"asof_loop_join_threshold": 0}


#: the environment variable that sets the threads of every DuckDB database pt2logs opens (unset: DuckDB's, one
#: per core). Where many pt2logs processes share the cores (a job runner's workers, a test suite's processes),
#: ``1`` spares each connection the thread pool DuckDB starts with it and the work its threads share: small
#: queries, the commands' and the ingest's, take less CPU alone (bench/RESULTS.md).
THREADS_ENV = "PT2LOGS_DUCKDB_THREADS"


def database_config(config: dict[str, Any] | None = None) -> dict[str, Any]:
    """``config`` for ``duckdb.connect``, with the threads :data:`THREADS_ENV` says unless ``config`` names them."""
    out = dict(config or {})
    threads = os.environ.get(THREADS_ENV, "").strip()
    if threads and "threads" not in out:
        if not threads.isdigit() or int(threads) < 1:
            raise ValueError(f"{THREADS_ENV}={threads!r}: a number of threads, 1 or more")
        out["threads"] = int(threads)
    return out


def apply_settings(con: duckdb.DuckDBPyConnection) -> None:
    """:data:`SETTINGS` on ``con``, each where this DuckDB has it."""
    for name, value in SETTINGS.items():
        # an older DuckDB has neither the setting nor the rewrite it turns off
        with contextlib.suppress(duckdb.Error):
            con.execute(f"SET {name} = {value}")


def connect(warehouse: str | Warehouse, **config: Any) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with every warehouse table as a view (:func:`read_warnings`: files left out)."""
    wh = warehouse if isinstance(warehouse, Warehouse) else Warehouse(warehouse)
    con = duckdb.connect(config=database_config(config))
    apply_settings(con)
    create_views(con, wh)
    return con


def _run(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None) -> Any:
    """``sql``'s rows as a pyarrow Table. DuckDB 2 through ``execute``: a relation (``con.sql``) binds the
    statement once to learn its columns and again to run it, a quarter of a small query's CPU; the copy
    of the rows it warns about is nothing next to that for the results pt2logs asks for (a stream of
    big results is :func:`arrow_reader`)."""
    if not hasattr(con, "to_arrow_table"):  # DuckDB 1.x: through a relation
        rel = con.sql(sql, params=params) if params else con.sql(sql)
        if rel is None:  # a statement without a result
            import pyarrow as pa

            return pa.table({})
        return (getattr(rel, "to_arrow_table", None) or rel.arrow)()
    con.execute(sql, params) if params else con.execute(sql)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Arrow output on a DB-API result", UserWarning)
        return con.to_arrow_table()


def arrow_table(
    con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None = None
) -> Any:
    """Run ``sql`` and return a pyarrow Table (DuckDB 1.x and 2.x spell this differently).

    A query that lost the race with the deletion of a replaced file is run again: it lists the
    files anew and no longer sees that one."""
    return _retried(con, lambda: _run(con, sql, params))


def python_rows(
    con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Run ``sql`` (under :func:`arrow_table`'s retries) and return its rows as dicts of DuckDB's own Python values
    (no pyarrow): for the facts a command reads itself (which run a reference names), not for what it writes."""

    def run() -> list[dict[str, Any]]:
        cur = con.execute(sql, params) if params else con.execute(sql)
        names = [d[0] for d in cur.description or ()]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    return _retried(con, run)


def arrow_reader(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    params: dict[str, Any] | None = None,
    batch_rows: int = 122_880,
) -> Any:
    """Run ``sql`` and return its rows as a pyarrow RecordBatchReader whose first batch is already read:
    memory bounded by ``batch_rows``, not by the result (``pt2logs query``). The first batch is read
    under :func:`arrow_table`'s retries, so a query that cannot run (or lost the race with a deletion)
    fails or runs again before anything is written; an error later comes from the reader's batches."""
    return _retried(con, lambda: _first_read(con, sql, params, batch_rows))


def _first_read(
    con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None, batch_rows: int
) -> Any:
    import itertools

    import pyarrow as pa

    rel = con.sql(sql, params=params) if params else con.sql(sql)
    if rel is None:  # a statement without a result
        return pa.table({}).to_reader()
    reader = (getattr(rel, "to_arrow_reader", None) or rel.fetch_arrow_reader)(batch_rows)
    first = next(iter(reader), None)
    if first is None:
        return pa.RecordBatchReader.from_batches(reader.schema, [])
    return pa.RecordBatchReader.from_batches(reader.schema, itertools.chain([first], reader))


def _retried(con: duckdb.DuckDBPyConnection, run: Any) -> Any:
    """``run()`` (a query of ``con``), again where it lost the race with a deletion (:func:`arrow_table`)."""
    snap = _SNAPSHOTS.get(con)
    if snap is not None and time.monotonic() - snap[1] > gc_grace_s() / 2:
        create_views(
            con, snap[0]
        )  # the snapshot's replaced files may be deleted soon: take a new one
    for attempt in range(VANISHED_RETRIES + 1):
        try:
            out = run()
            snap = _SNAPSHOTS.get(con)
            if (
                attempt == VANISHED_RETRIES
                or snap is None
                or time.monotonic() - snap[1] <= gc_grace_s()
                or _commits(snap[0]) == snap[2]
            ):
                return out
            create_views(
                con, snap[0]
            )  # its files may have been deleted before the query listed them
            continue
        except duckdb.Error as e:
            snap = _SNAPSHOTS.get(con)
            if (
                attempt < VANISHED_RETRIES
                and snap is not None
                and not isinstance(e, _ASKED_WRONG)  # (a query's own mistake reads no file)
                and kept_rows.recheck(snap[0])
            ):
                create_views(
                    con, snap[0]
                )  # a kept rows file did not read: the new views leave it out
                continue
            if attempt == VANISHED_RETRIES or not _vanished(e):
                raise
            if (
                snap is not None
            ):  # the snapshot's own files are gone (its views list them): take a new one
                create_views(con, snap[0])
    raise AssertionError("unreachable")

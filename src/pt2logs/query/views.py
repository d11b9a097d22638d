"""DuckDB views over the warehouse: every table is a view, dead rows hidden.

Each view reads exactly the files its snapshot's commits list (:mod:`pt2logs.store.snapshot`,
:mod:`pt2logs.query.view_sources`), selects the declared columns in declared order (NULL where no file
has one; a table with no files is an empty view of the right types) and keeps only the rows of each
run's live transaction (see :mod:`pt2logs.store.warehouse`).
"""

from __future__ import annotations

import contextlib
import time
import warnings
import weakref
from typing import Any

import duckdb

from pt2logs.query.sql_text import ident as _ident
from pt2logs.store.recovery import gc_grace_s
from pt2logs.store.snapshot import (
    Snapshot,
    damage_warnings,
    damaged_runs_files,
    is_data_path,
    runs_file_error,
    take,
)
from pt2logs.store.warehouse import (
    PARTITION,
    PAYLOAD_KEY,
    STORED,
    Warehouse,
    WarehouseError,
)
from pt2logs.tables import TABLES
from pt2logs.tables.compile import FRAME_ID_TABLES
from pt2logs.tables.schema import Table

_DUCK = {
    "str": "VARCHAR",
    "json": "VARCHAR",
    "i32": "INTEGER",
    "i64": "BIGINT",
    "f64": "DOUBLE",
    "bool": "BOOLEAN",
    "ts": "TIMESTAMPTZ",
    "list<str>": "VARCHAR[]",
    "list<i64>": "BIGINT[]",
}


def duck_type(kind: str) -> str:
    return _DUCK[kind]


def _select_list(t: Table, present: set[str] | None) -> str:
    cols = []
    for c in t.columns:
        if present is not None and c.name in present:
            cols.append(f"CAST({_ident(c.name)} AS {duck_type(c.kind)}) AS {_ident(c.name)}")
        else:
            cols.append(f"CAST(NULL AS {duck_type(c.kind)}) AS {_ident(c.name)}")
    part = (
        _ident(PARTITION)
        if present is not None and PARTITION in present
        else "CAST(NULL AS VARCHAR)"
    )
    cols.append(f"{part} AS {_ident(PARTITION)}")
    return ", ".join(cols)


def _relative_items(t: Table) -> list[str]:
    """``REPLACE`` items: the table's user-code path columns relative to the run's root; its compile id's
    integers, from the text in rows stored before them (compile_id_frames())."""
    items = [
        f"run_relative(t.{_ident(col)}, {('t.' + _ident(kind)) if kind else 'NULL'}, u.user_root) AS {_ident(col)}"
        for col, kind in t.run_relative
    ]
    if t.name in FRAME_ID_TABLES:
        items += [
            f"coalesce(t.{c}, compile_id_frames(t.compile_id).{c}) AS {c}"
            for c in ("frame_id", "frame_compile_id")
        ]
    return items


def view_statements(
    con: duckdb.DuckDBPyConnection,
    wh: Warehouse,
    snapshot: bool = False,
    snap: Snapshot | None = None,
    kept: bool = True,
) -> list[str]:
    """The CREATE VIEW statements for every table of the warehouse.

    With ``snapshot``, the ``runs`` files are read once, when the statements are run, into a table of
    the snapshot's catalog (:mod:`pt2logs.query.catalog`): every query of the connection then sees the
    same committed transactions (a commit that lands later is not seen, and a query never pairs one
    commit's runs with another's rows). Without it (the views file for other tools), each query lists the
    runs files anew. With ``snap`` the views read exactly its files; ``kept=False``: no outcome
    kept per transaction is read (pt2logs.query.outcome_store)."""
    return _statements(con, wh, snapshot, snap, kept)[0]


def _statements(
    con: duckdb.DuckDBPyConnection,
    wh: Warehouse,
    snapshot: bool,
    snap: Snapshot | None = None,
    kept: bool = True,
) -> tuple[list[str], frozenset[str]]:
    """:func:`view_statements`, and the names of the ``runs`` files (the commits, replaced ones too)
    listed to make them: listed before the statements read them, so a commit that lands after the
    listing is one the snapshot may hold but the names lack (a query is then run again, never skipped).
    With ``snap`` the views read exactly its files."""
    # (imported here: a connection whose catalog is cached never needs the macros, nor the readers they name)
    from pt2logs.query import outcome_store
    from pt2logs.query.macros import statements as macro_statements
    from pt2logs.query.view_sources import Glob, Listed, payloads_view

    scalar, table = (
        macro_statements()
    )  # (queries/macros/*.sql: scalar ones before the views, table ones after)
    stmts = list(scalar)
    src: Any = Listed(con, wh, snap) if snap is not None else Glob(con, wh)
    commits = snap.commits if snap is not None else _commits(wh)
    runs_present = src.present("runs")
    runs_src = src.sql("runs") if runs_present is not None else "(SELECT 1 WHERE false)"
    # fixed in a snapshot: live transactions, best sources made once (a view of roots keeps a run filter)
    kind = "TABLE" if snapshot else "VIEW"
    stmts.append(
        f"CREATE OR REPLACE {kind} _runs_all AS SELECT {_select_list(TABLES['runs'], runs_present)} FROM {runs_src}"
    )
    stmts += [
        f"CREATE OR REPLACE {kind} _live AS SELECT run_id, arg_max(txn, committed_at) AS txn FROM _runs_all GROUP BY run_id",
        "CREATE OR REPLACE VIEW _run_roots AS SELECT run_id, user_root FROM _runs_all SEMI JOIN _live USING (run_id, txn)",
    ]
    files_src = (
        f"(SELECT run_id, txn, format FROM {src.sql('files')}) f SEMI JOIN _live USING (run_id, txn)"
        if src.present("files") is not None
        else "(SELECT NULL::VARCHAR AS run_id, NULL::VARCHAR AS format WHERE false) f"
    )
    # a run's best source (lowest rank: format_rank(), source_rank()): the views of a table with a source keep its rows
    stmts.append(
        f"CREATE OR REPLACE {kind} _run_source AS SELECT run_id, min(format_rank(format)) AS best FROM {files_src} GROUP BY run_id"
    )
    stmts.append(payloads_view(src))
    for name in TABLES:
        if name == "runs":
            # warehouses written before n_ranks counted a rankless run as one process stored 0
            stmts.append(
                "CREATE OR REPLACE VIEW runs AS SELECT * REPLACE (greatest(coalesce(n_ranks, 0), 1)::INTEGER AS n_ranks) "
                "FROM _runs_all r SEMI JOIN _live l USING (run_id, txn)"
            )
            continue
        stmts += table_statements(name, src)
    # outcomes kept per transaction (read by rank_outcomes(); the views file for other tools reads none)
    stmts.append(outcome_store.view_sql(wh, snap.files.get("runs", []) if snap and kept else None))
    stmts += table
    return stmts, commits


def table_statements(
    name: str, src: Any, kind: str = "VIEW", payloads: str = "_payloads"
) -> list[str]:
    """The statements that make table ``name`` (not ``runs``) a ``kind`` (VIEW, or TEMP TABLE for a run scope:
    pt2logs.query.run_scope) over ``src`` (view_sources: its files and columns), its stored texts from
    ``payloads``; a table with a ``source`` column is two: ``<name>_all_sources`` and ``<name>``, one source a run."""
    t = TABLES[name]
    stmts: list[str] = []
    present = src.present(name)
    target = _ident(name + "_all_sources") if "source" in t.names else _ident(name)
    if present is None:
        stmts.append(
            f"CREATE OR REPLACE {kind} {target} AS SELECT {_select_list(t, None)} WHERE false"
        )
    else:
        replace = _relative_items(t)
        roots = " LEFT JOIN _run_roots u USING (run_id)" if t.run_relative else ""
        # long texts kept once in the store: put back, one join per stored column (DuckDB keeps it even in a
        # query that does not read the text; it then reads only the store's keys)
        pairs = [(_ident(text), _ident(k)) for text, k in STORED.get(name, ()) if k in present]
        replace += [
            f"coalesce(t.{text}, p{i}.payload) AS {text}" for i, (text, _) in enumerate(pairs)
        ]
        keys = ", ".join(k for _, k in pairs)
        key = f", {keys}" if pairs else ""
        stored = "".join(
            f" LEFT JOIN {payloads} p{i} ON t.{k} = p{i}.{_ident(PAYLOAD_KEY)}"
            for i, (_, k) in enumerate(pairs)
        )
        cols = "*"
        if replace:  # (every stored text is in it)
            cols = (
                "t.*" + (f" EXCLUDE ({keys})" if pairs else "") + f" REPLACE ({', '.join(replace)})"
            )
        stmts.append(
            f"CREATE OR REPLACE {kind} {target} AS SELECT {cols} FROM (SELECT {_select_list(t, present)}{key} "
            f"FROM {src.sql(name)}) t SEMI JOIN _live l USING (run_id, txn){roots}{stored}"
        )
    if "source" in t.names:
        # a join with a per-run table (not a window), so filters on the partition column reach the scan;
        # Table.same_fact: another source's row stays unless the best source has the same fact
        rk = "source_rank(t.source)"
        same = " AND ".join(f"b.{c} IS NOT DISTINCT FROM t.{c}" for c in t.same_fact)
        also = f" OR NOT EXISTS (SELECT 1 FROM {target} b WHERE b.run_id = t.run_id AND source_rank(b.source) = s.best AND {same})"
        stmts.append(
            f"CREATE OR REPLACE {kind} {_ident(name)} AS SELECT t.* FROM {target} t LEFT JOIN _run_source s USING (run_id) "
            f"WHERE {rk} IS NULL OR s.best IS NULL OR {rk} = s.best{also if same else ''}"
        )
    return stmts


#: how often a query is run again when a file it listed was deleted before it was read
VANISHED_RETRIES = 3


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


def _commits(wh: Warehouse) -> frozenset[str]:
    """The names of the ``runs`` files (the commits) there are now."""
    return frozenset(
        f.rsplit("/", 1)[-1] for f in wh.table_files("runs") if is_data_path(wh.rel(f))
    )


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
        try:
            catalog.attach(con, wh, snap, lambda s=snap: _statements(con, wh, True, s)[0])
            _SNAPSHOTS[con] = (wh, taken, snap.commits)
            _DAMAGE[con] = damage_warnings(con, wh, snap)
            _TAKEN[con] = snap
            return
        except duckdb.Error as e:
            if attempt == VANISHED_RETRIES or not _vanished(e):
                bad = damaged_runs_files(wh, snap.files.get("runs", []))
                if bad:
                    raise WarehouseError(runs_file_error(wh, bad)) from None
                raise


#: settings of every connection pt2logs makes. ``asof_loop_join_threshold``: DuckDB (since 1.3) turns an
#: ASOF join whose left side it estimates under 64 rows into a nested loop join; 2.0.1 estimates the
#: lookups of ``cache_pairs`` at 41 rows where a fleet has 100,000s, and ``cache_misses`` took 17 s
#: instead of 0.5 s at 10,000 runs (bench/RESULTS.md). An ASOF join of pt2logs is never that small.
SETTINGS = {"asof_loop_join_threshold": 0}


def apply_settings(con: duckdb.DuckDBPyConnection) -> None:
    """:data:`SETTINGS` on ``con``, each where this DuckDB has it."""
    for name, value in SETTINGS.items():
        # an older DuckDB has neither the setting nor the rewrite it turns off
        with contextlib.suppress(duckdb.Error):
            con.execute(f"SET {name} = {value}")


def connect(warehouse: str | Warehouse, **config: Any) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with every warehouse table as a view (:func:`read_warnings`: files left out)."""
    wh = warehouse if isinstance(warehouse, Warehouse) else Warehouse(warehouse)
    con = duckdb.connect(config=config or {})
    apply_settings(con)
    create_views(con, wh)
    return con


def _run(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None) -> Any:
    """``sql``'s rows as a pyarrow Table. DuckDB 2 through ``execute``: a relation (``con.sql``) binds the
    statement once to learn its columns and again to run it, a quarter of a small query's CPU; the copy
    of the rows it warns about is nothing next to that for the results pt2logs asks for (a stream of
    big results is :func:`arrow_batches`)."""
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
    snap = _SNAPSHOTS.get(con)
    if snap is not None and time.monotonic() - snap[1] > gc_grace_s() / 2:
        create_views(
            con, snap[0]
        )  # the snapshot's replaced files may be deleted soon: take a new one
    for attempt in range(VANISHED_RETRIES + 1):
        try:
            out = _run(con, sql, params)
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
            if attempt == VANISHED_RETRIES or not _vanished(e):
                raise
            snap = _SNAPSHOTS.get(con)
            if (
                snap is not None
            ):  # the snapshot's own files are gone (its views list them): take a new one
                create_views(con, snap[0])
    raise AssertionError("unreachable")


def arrow_batches(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    batch_rows: int = 250_000,
    params: dict[str, Any] | None = None,
) -> Any:
    """Run ``sql`` and stream the result as pyarrow RecordBatches."""
    rel = con.sql(sql, params=params) if params else con.sql(sql)
    fn = (
        getattr(rel, "to_arrow_reader", None)
        or getattr(rel, "record_batch", None)
        or rel.fetch_arrow_reader
    )
    return fn(batch_rows)

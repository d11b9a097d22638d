"""DuckDB views over the warehouse: every table is a view, dead rows hidden.

Each view reads exactly the files its snapshot's commits list (:mod:`pt2logs.store.snapshot`,
:mod:`pt2logs.query.view_sources`), selects the declared columns in declared order (NULL where no file
has one; a table with no files is an empty view of the right types) and keeps only the rows of each
run's live transaction (see :mod:`pt2logs.store.warehouse`).
"""

from __future__ import annotations

import contextlib
import time
import weakref
from typing import Any

import duckdb

from pt2logs.query.advice import advice_macros
from pt2logs.query.cache_rules import CACHE_MACROS
from pt2logs.query.outcome_rules import OUTCOME_MACROS
from pt2logs.query.view_sources import Glob, Listed
from pt2logs.query.vllm_rules import VLLM_MACROS
from pt2logs.readers import source_ranks
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
    PAYLOADS,
    STORED,
    Warehouse,
    WarehouseError,
)
from pt2logs.tables.schema import TABLES, Table

_DUCK = {
    "str": "VARCHAR", "json": "VARCHAR", "i32": "INTEGER", "i64": "BIGINT", "f64": "DOUBLE", "bool": "BOOLEAN",
    "ts": "TIMESTAMPTZ", "list<str>": "VARCHAR[]", "list<i64>": "BIGINT[]",
}


def duck_type(kind: str) -> str:
    return _DUCK[kind]


def _q(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _ident(s: str) -> str:
    return '"' + s.replace('"', '""') + '"'


def _select_list(t: Table, present: set[str] | None) -> str:
    cols = []
    for c in t.columns:
        if present is not None and c.name in present:
            cols.append(f"CAST({_ident(c.name)} AS {duck_type(c.kind)}) AS {_ident(c.name)}")
        else:
            cols.append(f"CAST(NULL AS {duck_type(c.kind)}) AS {_ident(c.name)}")
    part = _ident(PARTITION) if present is not None and PARTITION in present else "CAST(NULL AS VARCHAR)"
    cols.append(f"{part} AS {_ident(PARTITION)}")
    return ", ".join(cols)


#: When one run has several sources describing the same compiles (a trace and its stderr capture),
#: the views keep, per run, the rows of its best source (lowest rank), chosen from the formats of
#: the run's files; the ``<table>_all_sources`` views keep every row. The ranks are the formats' own
#: (``Format.source_rank``); sources with none (e.g. ``spyre``) describe other things and are always kept.
_RANKED = source_ranks()
SOURCE_RANK = {src: rank for src, (_, rank) in _RANKED.items()}
#: the input format that yields each ranked source
SOURCE_FORMAT = {src: fmt for src, (fmt, _) in _RANKED.items()}


def _rank_sql(col: str) -> str:
    whens = " ".join(f"WHEN {_q(k)} THEN {v}" for k, v in SOURCE_RANK.items())
    return f"CASE {col} {whens} ELSE NULL END"


def _format_rank_sql(col: str) -> str:
    whens = " ".join(f"WHEN {_q(SOURCE_FORMAT[k])} THEN {v}" for k, v in SOURCE_RANK.items())
    return f"CASE {col} {whens} ELSE NULL END"


def _relative_items(t: Table) -> list[str]:
    """``REPLACE`` items: the table's user-code path columns relative to the run's root."""
    return [f"run_relative(t.{_ident(col)}, {('t.' + _ident(kind)) if kind else 'NULL'}, u.user_root) AS {_ident(col)}"
            for col, kind in t.run_relative]


def view_statements(con: duckdb.DuckDBPyConnection, wh: Warehouse, snapshot: bool = False) -> list[str]:
    """The CREATE VIEW statements for every table of the warehouse.

    With ``snapshot``, the ``runs`` files are read once, when the statements are run, into a temporary
    table: every query of the connection then sees the same committed transactions (a commit that lands
    later is not seen, and a query never pairs one commit's runs with another's rows). Without it (the
    views file for other tools), each query lists the runs files anew."""
    return _statements(con, wh, snapshot)[0]


def _statements(con: duckdb.DuckDBPyConnection, wh: Warehouse, snapshot: bool,
                snap: Snapshot | None = None) -> tuple[list[str], frozenset[str]]:
    """:func:`view_statements`, and the names of the ``runs`` files (the commits, replaced ones too)
    listed to make them: listed before the statements read them, so a commit that lands after the
    listing is one the snapshot may hold but the names lack (a query is then run again, never skipped).
    With ``snap`` the views read exactly its files."""
    stmts = list(PATH_MACROS)
    src: Any = Listed(con, wh, snap) if snap is not None else Glob(con, wh)
    commits = snap.commits if snap is not None else _commits(wh)
    runs_present = src.present("runs")
    runs_src = src.sql("runs") if runs_present is not None else "(SELECT 1 WHERE false)"
    kind = "TEMP TABLE" if snapshot else "VIEW"
    stmts.append(f"CREATE OR REPLACE {kind} _runs_all AS SELECT {_select_list(TABLES['runs'], runs_present)} FROM {runs_src}")
    stmts.append("CREATE OR REPLACE VIEW _live AS SELECT run_id, arg_max(txn, committed_at) AS txn FROM _runs_all GROUP BY run_id")
    stmts.append("CREATE OR REPLACE VIEW _run_roots AS SELECT run_id, user_root FROM _runs_all SEMI JOIN _live USING (run_id, txn)")
    files_src = (f"(SELECT run_id, txn, format FROM {src.sql('files')}) f SEMI JOIN _live USING (run_id, txn)"
                 if src.present("files") is not None else "(SELECT NULL::VARCHAR AS run_id, NULL::VARCHAR AS format WHERE false) f")
    stmts.append(f"CREATE OR REPLACE VIEW _run_source AS SELECT run_id, min({_format_rank_sql('format')}) AS best "
                 f"FROM {files_src} GROUP BY run_id")
    stmts.append(_payloads_view(src))
    for name, t in TABLES.items():
        if name == "runs":
            # warehouses written before n_ranks counted a rankless run as one process stored 0
            stmts.append("CREATE OR REPLACE VIEW runs AS SELECT * REPLACE (greatest(coalesce(n_ranks, 0), 1)::INTEGER AS n_ranks) "
                         "FROM _runs_all r SEMI JOIN _live l USING (run_id, txn)")
            continue
        present = src.present(name)
        target = _ident(name + "_all_sources") if "source" in t.names else _ident(name)
        if present is None:
            stmts.append(f"CREATE OR REPLACE VIEW {target} AS SELECT {_select_list(t, None)} WHERE false")
        else:
            replace = _relative_items(t)
            roots = " LEFT JOIN _run_roots u USING (run_id)" if t.run_relative else ""
            # long texts kept once in the store: put back, one join per stored column (DuckDB keeps it even in a
            # query that does not read the text; it then reads only the store's keys)
            pairs = [(_ident(text), _ident(k)) for text, k in STORED.get(name, ()) if k in present]
            replace += [f"coalesce(t.{text}, p{i}.payload) AS {text}" for i, (text, _) in enumerate(pairs)]
            keys = ", ".join(k for _, k in pairs)
            key = f", {keys}" if pairs else ""
            stored = "".join(f" LEFT JOIN _payloads p{i} ON t.{k} = p{i}.{_ident(PAYLOAD_KEY)}" for i, (_, k) in enumerate(pairs))
            cols = "*"
            if replace:  # (every stored text is in it)
                cols = "t.*" + (f" EXCLUDE ({keys})" if pairs else "") + f" REPLACE ({', '.join(replace)})"
            stmts.append(
                f"CREATE OR REPLACE VIEW {target} AS SELECT {cols} FROM (SELECT {_select_list(t, present)}{key} "
                f"FROM {src.sql(name)}) t SEMI JOIN _live l USING (run_id, txn){roots}{stored}"
            )
        if "source" in t.names:
            # a join with a per-run table (not a window), so filters on the partition column reach the scan
            rk = _rank_sql("t.source")
            stmts.append(
                f"CREATE OR REPLACE VIEW {_ident(name)} AS SELECT t.* FROM {target} t LEFT JOIN _run_source s USING (run_id) "
                f"WHERE {rk} IS NULL OR s.best IS NULL OR {rk} = s.best"
            )
    stmts += MACROS
    return stmts, commits


def _payloads_view(src: Any) -> str:
    """``_payloads``: one row per key of the payload store (pt2logs.store.payloads). Every file is read, not
    only committed ones: a key is the hash of its text, so any copy of it is the right text, and an
    events row only ever names a key that is committed with it or before it."""
    if src.present(PAYLOADS) is None:
        return f"CREATE OR REPLACE VIEW _payloads AS SELECT NULL::BLOB AS {_ident(PAYLOAD_KEY)}, NULL::VARCHAR AS payload WHERE false"
    return (f"CREATE OR REPLACE VIEW _payloads AS SELECT {_ident(PAYLOAD_KEY)}, any_value(payload) AS payload "
            f"FROM (SELECT {_ident(PAYLOAD_KEY)}, payload FROM {src.sql(PAYLOADS)}) GROUP BY {_ident(PAYLOAD_KEY)}")


#: what the views themselves use (created before them): a user-code path made relative to its
#: run's root (runs.user_root, ending in /); other kinds of paths (library, stdlib) are keys already
PATH_MACROS = [
    """CREATE OR REPLACE MACRO run_relative(path, kind, root) AS
         CASE WHEN path IS NULL OR coalesce(kind, 'user') <> 'user' OR root IS NULL OR NOT starts_with(path, root)
              THEN path ELSE substr(path, length(root) + 1) END""",
]

#: helpers the named queries share: selecting runs the same way, and rules stated once
MACROS = [
    # partition pruning: a run is always ingested after it started, so ingest_date >= since keeps them all
    """CREATE OR REPLACE MACRO since_partition(ingest_date, since) AS
         since IS NULL OR ingest_date >= strftime(CAST(since AS TIMESTAMPTZ) AT TIME ZONE 'UTC', '%Y-%m-%d')""",
    # a tag's value by key: a JSON Pointer (~ and / escaped), so any key works, quotes and $ included
    """CREATE OR REPLACE MACRO tag_value(tags, tag_key) AS
         json_extract_string(tags, '/' || replace(replace(tag_key, '~', '~0'), '/', '~1'))""",
    # tag is KEY=VALUE, split at the first '=' (k=a=b: key k, value a=b)
    """CREATE OR REPLACE MACRO tag_match(tags, tag) AS
         tag IS NULL OR tag_value(tags, substr(tag, 1, strpos(tag, '=') - 1)) = substr(tag, strpos(tag, '=') + 1)""",
    """CREATE OR REPLACE MACRO selected_runs(run, since, until, tag) AS TABLE
         SELECT run_id FROM runs
         WHERE (run IS NULL OR run_id = run OR name = run OR starts_with(run_id, run) OR starts_with(name, run))
           AND (since IS NULL OR started_at >= since)
           AND (until IS NULL OR started_at < until)
           AND tag_match(tags, tag)""",
    # the same selection, but with no filter at all the newest run only (newest start, then name, then
    # id), not the fleet: for queries about one run (trace events, a bug report's graphs) and for every
    # command about one run given none (pt2logs.reports.runs.resolve_run)
    """CREATE OR REPLACE MACRO selected_runs_or_newest(run, since, until, tag) AS TABLE
         SELECT run_id FROM selected_runs(run, since, until, tag)
         WHERE run IS NOT NULL OR since IS NOT NULL OR until IS NOT NULL OR tag IS NOT NULL
         UNION ALL
         (SELECT run_id FROM runs WHERE run IS NULL AND since IS NULL AND until IS NULL AND tag IS NULL
          ORDER BY started_at DESC NULLS LAST, name, run_id LIMIT 1)""",
    # graph-break sites (the identity of docs/tables.md#graph_breaks): break id + user frame + library
    # frame; rows ingested before the identity columns (break_key NULL) fall back to their raw location
    """CREATE OR REPLACE MACRO graph_break_sites() AS TABLE
         SELECT *, coalesce(break_key, gb_id, gb_type) AS site_break,
                CASE WHEN break_key IS NULL THEN user_filename ELSE frame_file END AS site_file,
                CASE WHEN break_key IS NULL THEN user_lineno ELSE frame_line END AS site_line,
                lib_file || coalesce(' in ' || lib_func, '') AS library_frame
         FROM graph_breaks""",
    # a compiled function's identity: its file's identity (co_file, raw co_filename before v2) + co_name
    # + for user code its first line (two `forward`s of one file are two functions; a library's lines
    # move between releases, so they are not part of its functions' identity)
    """CREATE OR REPLACE MACRO function_file(co_file, co_filename) AS coalesce(co_file, co_filename)""",
    """CREATE OR REPLACE MACRO function_line(co_file_kind, co_firstlineno) AS
         CASE WHEN co_file_kind IN ('library', 'stdlib', 'other') THEN NULL ELSE co_firstlineno END""",
    # a failure's identity: failure_key; before v2 the type and the reason's first line
    """CREATE OR REPLACE MACRO failure_id(failure_key, fail_type, fail_reason) AS
         coalesce(failure_key, concat_ws(': ', fail_type, split_part(fail_reason, chr(10), 1)))""",
    # an exception message on one line: up to its first blank line or torch's Explanation / Hint /
    # Developer debug context, whitespace collapsed ("backend='x' raised: RuntimeError: boom")
    r"""CREATE OR REPLACE MACRO message_line(msg) AS
         trim(regexp_replace(split_part(regexp_replace(regexp_replace(msg, '\r', '', 'g'),
              '\n[ \t]*(?:\n|(?:Explanation|Hint|Developer debug context):)', chr(10) || chr(10), 'g'),
              chr(10) || chr(10), 1), '\s+', ' ', 'g'))""",
    # the non-overlapping stages of frame compiles: each nested time clamped to the one that contains it
    """CREATE OR REPLACE MACRO frame_compile_stages() AS TABLE
         SELECT run_id, rank, ingest_date,
                coalesce(entire_frame_compile_time_s, 0) AS total,
                least(coalesce(backend_compile_time_s, 0), coalesce(entire_frame_compile_time_s, 0)) AS backend,
                least(coalesce(inductor_compile_time_s, 0), coalesce(backend_compile_time_s, 0)) AS inductor,
                least(coalesce(code_gen_time_s, 0), coalesce(inductor_compile_time_s, 0)) AS codegen
         FROM compilation_metrics
         WHERE kind = 'compilation_metrics'""",
    # rank_outcomes(run, since, until, tag): how each rank of the selected runs ended (pt2logs.query.outcome_rules)
    *OUTCOME_MACROS,
    # vllm_cold_starts(run, since, until, tag): a vLLM run's cold start in parts (pt2logs.query.vllm_rules)
    *VLLM_MACROS,
    # advice_rules() / advice_items(run, since, until, tag): advice.toml matched against the facts (pt2logs.query.advice)
    *advice_macros(),
    # cache_lookups(), cache_pairs(...), cache_pair_diffs(...), cache_component_diffs(...): why a cache missed (pt2logs.query.cache_rules)
    *CACHE_MACROS,
]


#: how often a query is run again when a file it listed was deleted before it was read
VANISHED_RETRIES = 3


def _vanished(e: Exception) -> bool:
    """A file listed by a query's glob was gone when the query opened it (a compaction's replaced
    files are deleted after a grace period; a query listing at that instant sees this)."""
    msg = str(e)
    return ".parquet" in msg and any(s in msg for s in ("No such file", "Cannot open file", "not found", "does not exist",
                                                         "No files found"))


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
_SNAPSHOTS: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, tuple[Warehouse, float, frozenset[str]]] = \
    weakref.WeakKeyDictionary()
#: per connection: (warnings about files left out, the live runs they held)
_DAMAGE: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, tuple[list[str], set[str]]] = weakref.WeakKeyDictionary()
_TAKEN: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, Snapshot] = weakref.WeakKeyDictionary()


def snapshot_of(con: duckdb.DuckDBPyConnection) -> Snapshot:
    """The files the connection's views read, and those left out (:mod:`pt2logs.store.snapshot`)."""
    return _TAKEN[con]


def _commits(wh: Warehouse) -> frozenset[str]:
    """The names of the ``runs`` files (the commits) there are now."""
    return frozenset(f.rsplit("/", 1)[-1] for f in wh.table_files("runs") if is_data_path(wh.rel(f)))


def read_warnings(con: duckdb.DuckDBPyConnection) -> list[str]:
    """What the connection's snapshot left out: each damaged or missing file of a live run, with its runs."""
    return list(_DAMAGE.get(con, ([], set()))[0])


def damaged_runs(con: duckdb.DuckDBPyConnection) -> set[str]:
    """The live runs whose stored rows are incomplete (a file of theirs is damaged or missing)."""
    return set(_DAMAGE.get(con, ([], set()))[1])


def _records(con: duckdb.DuckDBPyConnection, wh: Warehouse, runs: list[str]) -> dict[str, Any]:
    """The commit records of ``runs`` (rel paths), from their footers in one DuckDB call."""
    from pt2logs.store.manifest import KEY, parse_record

    url = {wh.url(*r.split("/")): r for r in runs}
    try:
        rows = con.execute("SELECT file_name, value FROM parquet_kv_metadata($files) WHERE key = $key",
                           {"files": list(url), "key": KEY}).fetchall()
        return {url[f]: parse_record(v) for f, v in rows}
    except (duckdb.Error, ValueError) as e:
        bad = damaged_runs_files(wh, runs)
        if bad:
            raise WarehouseError(runs_file_error(wh, bad)) from None
        raise e


def create_views(con: duckdb.DuckDBPyConnection, wh: Warehouse) -> None:
    """Every table as a view over a snapshot of the committed runs (see :func:`view_statements`): each
    view reads exactly the files its commits list (:mod:`pt2logs.store.snapshot`)."""
    attach_filesystem(con, wh)
    taken = time.monotonic()  # before the listing: the snapshot is never younger than this says
    for attempt in range(VANISHED_RETRIES + 1):
        snap = take(wh, read_records=lambda runs: _records(con, wh, runs))
        try:
            stmts, commits = _statements(con, wh, snapshot=True, snap=snap)
            for s in stmts:
                con.execute(s)  # binding a view opens its files: it can lose the race with a deletion
            _SNAPSHOTS[con] = (wh, taken, commits)
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


def arrow_table(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None = None) -> Any:
    """Run ``sql`` and return a pyarrow Table (DuckDB 1.x and 2.x spell this differently).

    A query that lost the race with the deletion of a replaced file is run again: it lists the
    files anew and no longer sees that one."""
    snap = _SNAPSHOTS.get(con)
    if snap is not None and time.monotonic() - snap[1] > gc_grace_s() / 2:
        create_views(con, snap[0])  # the snapshot's replaced files may be deleted soon: take a new one
    for attempt in range(VANISHED_RETRIES + 1):
        try:
            rel = con.sql(sql, params=params) if params else con.sql(sql)
            if rel is None:  # a statement without a result
                import pyarrow as pa

                return pa.table({})
            fn = getattr(rel, "to_arrow_table", None) or rel.arrow
            out = fn()
            snap = _SNAPSHOTS.get(con)
            if (attempt == VANISHED_RETRIES or snap is None or time.monotonic() - snap[1] <= gc_grace_s()
                    or _commits(snap[0]) == snap[2]):
                return out
            create_views(con, snap[0])  # its files may have been deleted before the query listed them
            continue
        except duckdb.Error as e:
            if attempt == VANISHED_RETRIES or not _vanished(e):
                raise
            snap = _SNAPSHOTS.get(con)
            if snap is not None:  # the snapshot's own files are gone (its views list them): take a new one
                create_views(con, snap[0])
    raise AssertionError("unreachable")


def arrow_batches(con: duckdb.DuckDBPyConnection, sql: str, batch_rows: int = 250_000,
                  params: dict[str, Any] | None = None) -> Any:
    """Run ``sql`` and stream the result as pyarrow RecordBatches."""
    rel = con.sql(sql, params=params) if params else con.sql(sql)
    fn = getattr(rel, "to_arrow_reader", None) or getattr(rel, "record_batch", None) or rel.fetch_arrow_reader
    return fn(batch_rows)

"""DuckDB views over the warehouse: every table is a view, dead rows hidden.

For each table the view reads ``<wh>/<table>/**/*.parquet`` (``union_by_name``,
hive partitions), selects the columns declared in :mod:`pt2logs.tables` in
their declared order (a column missing from older files reads as NULL, a
table with no files yet is an empty view of the right types) and keeps only
the rows of each run's live transaction (see :mod:`pt2logs.warehouse`).
"""

from __future__ import annotations

import contextlib
import time
import weakref
from typing import Any

import duckdb

from pt2logs.advice import advice_macros
from pt2logs.cache_rules import CACHE_MACROS
from pt2logs.outcome_rules import OUTCOME_MACROS
from pt2logs.readers import source_ranks
from pt2logs.recovery import gc_grace_s
from pt2logs.schema import TABLES, Table
from pt2logs.vllm_rules import VLLM_MACROS
from pt2logs.warehouse import PARTITION, PAYLOAD_KEY, PAYLOADS, STORED, Warehouse

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


def source_sql(wh: Warehouse, table: str, skip: set[str] | frozenset[str] = frozenset()) -> str:
    """The table's files (a glob: each query sees the files of that moment), less the files in ``skip``
    (names of files a compaction replaced: pruned by file name before they are scanned)."""
    glob = wh.url(table, "**", "*.parquet")
    src = f"read_parquet({_q(glob)}, union_by_name=true, hive_partitioning=true, hive_types={{{_q(PARTITION)}: VARCHAR}}"
    if not skip:
        return src + ")"
    names = ", ".join(_q(n) for n in sorted(skip))
    return f"(SELECT * EXCLUDE (filename) FROM {src}, filename=true) WHERE parse_filename(filename) NOT IN ({names}))"


def _present_columns(con: duckdb.DuckDBPyConnection, wh: Warehouse, table: str,
                     garbage: set[str] | None = None, files: list[str] | None = None) -> set[str] | None:
    """Columns the table's files hold: those of its newest file (file names sort by transaction time,
    and every pt2logs version writes all the columns it knows), plus the partition column.
    None when the table has no files yet (or only replaced ones). ``files``: its live files, when
    the caller listed them already."""
    files = wh.live_files(table, garbage) if files is None else files
    if not files:
        return None
    import pyarrow.parquet as pq

    try:
        with wh.fs.open(max(files, key=_txn_order), "rb") as f:
            names = set(pq.read_schema(f).names)
    except (OSError, ValueError):
        if con is None:
            return set(TABLES[table].names) | {PARTITION}
        rows = con.execute(f"DESCRIBE SELECT * FROM {source_sql(wh, table, garbage or set())}").fetchall()
        names = {r[0] for r in rows}
    return names | {PARTITION}


def _txn_order(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name[5:] if name.startswith("part-") else name


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


def _statements(con: duckdb.DuckDBPyConnection, wh: Warehouse, snapshot: bool) -> tuple[list[str], frozenset[str]]:
    """:func:`view_statements`, and the names of the ``runs`` files (the commits, replaced ones too)
    listed to make them: listed before the statements read them, so a commit that lands after the
    listing is one the snapshot may hold but the names lack (a query is then run again, never skipped)."""
    stmts = list(PATH_MACROS)
    # taken once, before the runs are read: the replaced files this connection's queries never open.
    # (Taken after, a compaction committing in between would hide the files of the runs read.)
    skip = wh.garbage_names()
    runs_files = wh.table_files("runs")
    commits = _commits(wh, runs_files)
    runs_present = _present_columns(con, wh, "runs", skip, [f for f in runs_files if f.rsplit("/", 1)[-1] not in skip])
    runs_src = source_sql(wh, "runs", skip) if runs_present is not None else "(SELECT 1 WHERE false)"
    kind = "TEMP TABLE" if snapshot else "VIEW"
    stmts.append(f"CREATE OR REPLACE {kind} _runs_all AS SELECT {_select_list(TABLES['runs'], runs_present)} FROM {runs_src}")
    stmts.append("CREATE OR REPLACE VIEW _live AS SELECT run_id, arg_max(txn, committed_at) AS txn FROM _runs_all GROUP BY run_id")
    stmts.append("CREATE OR REPLACE VIEW _run_roots AS SELECT run_id, user_root FROM _runs_all SEMI JOIN _live USING (run_id, txn)")
    files_present = _present_columns(con, wh, "files", skip)
    files_src = (f"(SELECT run_id, txn, format FROM {source_sql(wh, 'files', skip)}) f SEMI JOIN _live USING (run_id, txn)"
                 if files_present is not None else "(SELECT NULL::VARCHAR AS run_id, NULL::VARCHAR AS format WHERE false) f")
    stmts.append(f"CREATE OR REPLACE VIEW _run_source AS SELECT run_id, min({_format_rank_sql('format')}) AS best "
                 f"FROM {files_src} GROUP BY run_id")
    stmts.append(_payloads_view(wh, skip))
    for name, t in TABLES.items():
        if name == "runs":
            # warehouses written before n_ranks counted a rankless run as one process stored 0
            stmts.append("CREATE OR REPLACE VIEW runs AS SELECT * REPLACE (greatest(coalesce(n_ranks, 0), 1)::INTEGER AS n_ranks) "
                         "FROM _runs_all r SEMI JOIN _live l USING (run_id, txn)")
            continue
        present = _present_columns(con, wh, name, skip)
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
                f"FROM {source_sql(wh, name, skip)}) t SEMI JOIN _live l USING (run_id, txn){roots}{stored}"
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


def _payloads_view(wh: Warehouse, skip: set[str]) -> str:
    """``_payloads``: one row per key of the payload store (pt2logs.payloads). Every file is read, not
    only committed ones: a key is the hash of its text, so any copy of it is the right text, and an
    events row only ever names a key that is committed with it or before it."""
    if not wh.live_files(PAYLOADS, skip):
        return f"CREATE OR REPLACE VIEW _payloads AS SELECT NULL::BLOB AS {_ident(PAYLOAD_KEY)}, NULL::VARCHAR AS payload WHERE false"
    return (f"CREATE OR REPLACE VIEW _payloads AS SELECT {_ident(PAYLOAD_KEY)}, any_value(payload) AS payload "
            f"FROM (SELECT {_ident(PAYLOAD_KEY)}, payload FROM {source_sql(wh, PAYLOADS, skip)}) GROUP BY {_ident(PAYLOAD_KEY)}")


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
    # command about one run given none (pt2logs.report.resolve_run)
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
    # rank_outcomes(run, since, until, tag): how each rank of the selected runs ended (pt2logs.outcome_rules)
    *OUTCOME_MACROS,
    # vllm_cold_starts(run, since, until, tag): a vLLM run's cold start in parts (pt2logs.vllm_rules)
    *VLLM_MACROS,
    # advice_rules() / advice_items(run, since, until, tag): advice.toml matched against the facts (pt2logs.advice)
    *advice_macros(),
    # cache_lookups(), cache_pairs(...), cache_pair_diffs(...), cache_component_diffs(...): why a cache missed (pt2logs.cache_rules)
    *CACHE_MACROS,
]


#: how often a query is run again when a file it listed was deleted before it was read
VANISHED_RETRIES = 3


def _vanished(e: Exception) -> bool:
    """A file listed by a query's glob was gone when the query opened it (a compaction's replaced
    files are deleted after a grace period; a query listing at that instant sees this)."""
    msg = str(e)
    return ".parquet" in msg and any(s in msg for s in ("No such file", "Cannot open file", "not found", "does not exist"))


def attach_filesystem(con: duckdb.DuckDBPyConnection, wh: Warehouse) -> None:
    if wh.remote:
        con.register_filesystem(wh.fs)


#: connections made by :func:`create_views`: their warehouse, when their snapshot was taken and the
#: runs files (the commits) there were then (the listing the views were made from). Files a compaction replaced are deleted once the grace
#: period has passed (pt2logs.recovery), so a snapshot older than half of it is taken anew before the
#: connection's next query; and a query that ends after the whole grace period, when commits have
#: landed since the snapshot, may have listed the files after the snapshot's were deleted (no error:
#: its runs then have no rows), so it is run again on a new snapshot.
_SNAPSHOTS: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, tuple[Warehouse, float, frozenset[str]]] = \
    weakref.WeakKeyDictionary()


def _commits(wh: Warehouse, files: list[str] | None = None) -> frozenset[str]:
    """The names of the ``runs`` files (``files``: as listed already)."""
    return frozenset(f.rsplit("/", 1)[-1] for f in (wh.table_files("runs") if files is None else files))


def create_views(con: duckdb.DuckDBPyConnection, wh: Warehouse) -> None:
    """Every table as a view over a snapshot of the committed runs (see :func:`view_statements`)."""
    attach_filesystem(con, wh)
    taken = time.monotonic()  # before the listing: the snapshot is never younger than this says
    if wh.remote:
        wh.fs.invalidate_cache()  # fsspec caches listings; other processes may have written since
    for attempt in range(VANISHED_RETRIES + 1):
        try:
            stmts, commits = _statements(con, wh, snapshot=True)
            for s in stmts:
                con.execute(s)  # binding a view lists and opens its files: it can lose the same race
            _SNAPSHOTS[con] = (wh, taken, commits)
            return
        except duckdb.Error as e:
            if attempt == VANISHED_RETRIES or not _vanished(e):
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
    """A DuckDB connection with every warehouse table as a view."""
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
            if snap is not None and attempt > 0:  # the snapshot's own files are gone: take a new one
                create_views(con, snap[0])
    raise AssertionError("unreachable")


def arrow_batches(con: duckdb.DuckDBPyConnection, sql: str, batch_rows: int = 250_000,
                  params: dict[str, Any] | None = None) -> Any:
    """Run ``sql`` and stream the result as pyarrow RecordBatches."""
    rel = con.sql(sql, params=params) if params else con.sql(sql)
    fn = getattr(rel, "to_arrow_reader", None) or getattr(rel, "record_batch", None) or rel.fetch_arrow_reader
    return fn(batch_rows)

"""The SQL that makes the warehouse's views: a statement per table over its files, the snapshot's tables of
live transactions and best sources, the kept outcomes (pt2logs.query.outcome_store) and the macros.

:mod:`pt2logs.query.views` runs them on a connection (through a snapshot's catalog,
:mod:`pt2logs.query.catalog`); :mod:`pt2logs.query.run_scope` makes a run's copies with
:func:`table_statements`; the views file for the DuckDB CLI (pt2logs.ingestion.views_file) writes
:func:`view_statements`.
"""

from __future__ import annotations

from typing import Any

import duckdb

from pt2logs.query.sql_text import ident as _ident
from pt2logs.store.snapshot import Snapshot, is_data_path
from pt2logs.store.warehouse import PARTITION, PAYLOAD_KEY, STORED, Warehouse
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
    from pt2logs.query import advice_store, outcome_store
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
    runs_files = snap.files.get("runs", []) if snap and kept else None
    stmts.append(outcome_store.view_sql(wh, runs_files))
    # and advice items (read by advice_items(); pt2logs.query.advice_store)
    stmts.append(advice_store.view_sql(wh, runs_files))
    stmts += _kept_only(wh, runs_files, table)
    return stmts, commits


#: the macros whose rows are kept per transaction: (the view of the kept rows, the rows that are answers)
KEPT_MACROS = {
    "rank_outcomes": ("_rank_outcomes_kept", "true"),
    "advice_items": ("_advice_items_kept", "id IS NOT NULL"),  # (the others say a run was matched)
}


def _kept_only(wh: Warehouse, runs_files: list[str] | None, table: Any) -> list[str]:
    """The table macros' statements; when every live commit of the snapshot has its rows of a macro of
    :data:`KEPT_MACROS` kept, that macro made to read them alone. Its rules are then no part of the queries
    that call it: DuckDB binds and optimizes a table macro's whole body at every call, 100-170 ms for
    these two at any size of warehouse, for a branch that would match no run. Same answer, same columns
    (tests/test_outcome_store.py, tests/test_advice_store.py)."""
    from pt2logs.query import advice_store, outcome_store

    if runs_files is None:
        return list(table)
    live = outcome_store.live_commit_txns(runs_files)
    done = {
        "rank_outcomes": set(outcome_store.live_kept(wh, runs_files)),
        "advice_items": set(advice_store.live_kept(wh, runs_files)),
    }
    out = []
    for stmt in table:
        name = stmt.split("(", 1)[0].rsplit(" ", 1)[-1]
        if name in KEPT_MACROS and live <= done[name]:
            view, answers = KEPT_MACROS[name]
            stmt = (
                f"CREATE OR REPLACE MACRO {name}(p_run, p_since, p_until, p_tag) AS TABLE "
                f"SELECT * EXCLUDE (txn) FROM {view} "
                f"WHERE {answers} AND run_id IN (SELECT run_id FROM selected_runs(p_run, p_since, p_until, p_tag))"
            )
        out.append(stmt)
    return out


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
    # no files: nothing to choose among (and nothing to plan)
    if "source" in t.names and present is None:
        stmts.append(f"CREATE OR REPLACE {kind} {_ident(name)} AS SELECT * FROM {target}")
    elif "source" in t.names:
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


def _commits(wh: Warehouse) -> frozenset[str]:
    """The names of the ``runs`` files (the commits) there are now."""
    return frozenset(
        f.rsplit("/", 1)[-1] for f in wh.table_files("runs") if is_data_path(wh.rel(f))
    )

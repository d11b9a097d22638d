"""The SQL that makes the warehouse's views: a statement per table over its files, the snapshot's tables of
live transactions and best sources, the rows kept per transaction (pt2logs.query.kept_rows) and the macros.

:mod:`pt2logs.query.views` runs them on a connection (through a snapshot's catalog,
:mod:`pt2logs.query.catalog`); :mod:`pt2logs.query.run_scope` makes a run's copies with
:func:`table_statements`; the views file for the DuckDB CLI (pt2logs.ingestion.views_file) writes
:func:`view_statements`.
"""

from __future__ import annotations

from typing import Any

import duckdb

from pt2logs.query import frame_fill
from pt2logs.query.sql_text import ident as _ident
from pt2logs.store.snapshot import Snapshot, is_data_path
from pt2logs.store.warehouse import PARTITION, PAYLOAD_KEY, STORED, Warehouse
from pt2logs.tables import TABLES
from pt2logs.tables.schema import Table

#: a snapshot's live transactions: each run's newest committed one
_LIVE = "(SELECT run_id, arg_max(txn, committed_at) AS txn FROM _runs_all GROUP BY run_id)"


def _select_list(t: Table, present: set[str] | None) -> str:
    cols = []
    for c in t.columns:
        if present is not None and c.name in present:
            cols.append(f"CAST({_ident(c.name)} AS {c.duck}) AS {_ident(c.name)}")
        else:
            cols.append(f"CAST(NULL AS {c.duck}) AS {_ident(c.name)}")
    part = (
        _ident(PARTITION)
        if present is not None and PARTITION in present
        else "CAST(NULL AS VARCHAR)"
    )
    cols.append(f"{part} AS {_ident(PARTITION)}")
    return ", ".join(cols)


def _relative_items(t: Table, src: Any) -> list[str]:
    """``REPLACE`` items: the table's user-code path columns relative to the run's root; its compile id's
    integers where a file may lack them (pt2logs.query.frame_fill: the Python rule, on pt2logs' connections;
    the views file reads the stored columns alone)."""
    items = [
        f"run_relative(t.{_ident(col)}, {('t.' + _ident(kind)) if kind else 'NULL'}, u.user_root) AS {_ident(col)}"
        for col, kind in t.run_relative
    ]
    if src.fills_frames(t.name):
        items += frame_fill.select_items()
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
    runs files anew. With ``snap`` the views read exactly its files; ``kept=False``: no row
    kept per transaction is read (pt2logs.query.kept_rows)."""
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
    from pt2logs.query import kept_rows
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
        f"CREATE OR REPLACE {kind} _live AS SELECT * FROM {_LIVE}",
        "CREATE OR REPLACE VIEW _run_roots AS SELECT run_id, user_root FROM _runs_all SEMI JOIN _live USING (run_id, txn)",
    ]
    # the best sources read the live transactions themselves, never a name a connection may shadow: a catalog
    # made while a run scope's temporary ``_live`` (its runs only) stood in front of the snapshot's
    # (pt2logs.query.scope_plan; a keep's, kept_cache) kept the best sources of those runs only, and every later
    # connection to that snapshot read both sources of the others (their rows twice)
    files_src = (
        f"(SELECT run_id, txn, format FROM {src.sql('files')}) f SEMI JOIN {_LIVE} USING (run_id, txn)"
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
    # the rows kept per transaction (read by rank_outcomes(), advice_items(); the views file for other tools
    # reads none), and the table macros
    runs_files = snap.files.get("runs", []) if snap and kept else None
    stmts += kept_rows.view_statements(wh, runs_files, table)
    return stmts, commits


def table_statements(
    name: str, src: Any, kind: str = "VIEW", payloads: str = "_payloads", fused: bool = False
) -> list[str]:
    """The statements that make table ``name`` (not ``runs``) a ``kind`` (VIEW, or TEMP TABLE for a run scope:
    pt2logs.query.run_scope) over ``src`` (view_sources: its files and columns), its stored texts from
    ``payloads``; a table with a ``source`` column is two: ``<name>_all_sources`` and ``<name>``, one source a run
    (``fused``: ``<name>`` alone in one statement where no row stays for another source's facts, ``same_fact``: a run
    scope whose questions never read ``<name>_all_sources``)."""
    t = TABLES[name]
    stmts: list[str] = []
    present = src.present(name)
    target = _ident(name + "_all_sources") if "source" in t.names else _ident(name)
    rk = "source_rank(t.source)"
    one = f"t LEFT JOIN _run_source s USING (run_id) WHERE {rk} IS NULL OR s.best IS NULL OR {rk} = s.best"
    if present is None:
        stmts.append(
            f"CREATE OR REPLACE {kind} {target} AS SELECT {_select_list(t, None)} WHERE false"
        )
    elif fused and "source" in t.names and not t.same_fact:
        body = _rows(t, src, present, payloads)
        return [f"CREATE OR REPLACE {kind} {_ident(name)} AS SELECT t.* FROM ({body}) {one}"]
    else:
        stmts.append(f"CREATE OR REPLACE {kind} {target} AS {_rows(t, src, present, payloads)}")
    # no files: nothing to choose among (and nothing to plan)
    if "source" in t.names and present is None:
        stmts.append(f"CREATE OR REPLACE {kind} {_ident(name)} AS SELECT * FROM {target}")
    elif "source" in t.names:
        # a join with a per-run table (not a window), so filters on the partition column reach the scan;
        # Table.same_fact: another source's row stays unless the best source has the same fact
        same = " AND ".join(f"b.{c} IS NOT DISTINCT FROM t.{c}" for c in t.same_fact)
        also = f" OR NOT EXISTS (SELECT 1 FROM {target} b WHERE b.run_id = t.run_id AND source_rank(b.source) = s.best AND {same})"
        stmts.append(
            f"CREATE OR REPLACE {kind} {_ident(name)} AS SELECT t.* FROM {target} {one}{also if same else ''}"
        )
    return stmts


def _rows(t: Table, src: Any, present: set[str], payloads: str) -> str:
    """The SELECT of table ``t``'s rows over ``src``: declared columns, live transactions only, user paths relative
    to the run's root, stored texts put back from ``payloads``."""
    replace = _relative_items(t, src)
    roots = " LEFT JOIN _run_roots u USING (run_id)" if t.run_relative else ""
    # long texts kept once in the store: put back, one join per stored column (DuckDB keeps it even in a
    # query that does not read the text; it then reads only the store's keys)
    pairs = [(_ident(text), _ident(k)) for text, k in STORED.get(t.name, ()) if k in present]
    replace += [f"coalesce(t.{text}, p{i}.payload) AS {text}" for i, (text, _) in enumerate(pairs)]
    keys = ", ".join(k for _, k in pairs)
    key = f", {keys}" if pairs else ""
    stored = "".join(
        f" LEFT JOIN {payloads} p{i} ON t.{k} = p{i}.{_ident(PAYLOAD_KEY)}"
        for i, (_, k) in enumerate(pairs)
    )
    cols = "*"
    if replace:  # (every stored text is in it)
        cols = "t.*" + (f" EXCLUDE ({keys})" if pairs else "") + f" REPLACE ({', '.join(replace)})"
    return (
        f"SELECT {cols} FROM (SELECT {_select_list(t, present)}{key} "
        f"FROM {src.sql(t.name)}) t SEMI JOIN _live l USING (run_id, txn){roots}{stored}"
    )


def _commits(wh: Warehouse) -> frozenset[str]:
    """The names of the ``runs`` files (the commits) there are now."""
    return frozenset(
        f.rsplit("/", 1)[-1] for f in wh.table_files("runs") if is_data_path(wh.rel(f))
    )

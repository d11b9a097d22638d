"""Keeping the outcomes of committed transactions (:mod:`pt2logs.query.outcome_store` says what and why).

:func:`keep` decides the ``rank_outcomes()`` rows of each given committed transaction's runs and writes them
to ``_outcomes/<key>/<txn>.pq``. Each transaction is read alone: a connection whose views list only
its files (its ``runs`` file, its data files; a run's rows are all in its live transaction, and the outcome
rules read no stored text, so not the payload store either), its runs decided a few hundred at a time (the
connection's live runs narrowed to those), so memory is bounded by a transaction's chunk, not the fleet.
A transaction with a damaged or missing file keeps nothing (its runs are decided at query time, as the
views see them). A kept file that is not read (damaged: :mod:`pt2logs.query.outcome_store`) is written
anew by the next keep, an ingest's as well as a compaction's. Writing is never required for a right answer: whatever is not kept is decided at query
time, so a failure here is a note, not an error of the ingest or the compaction.
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
from dataclasses import dataclass, field

import duckdb

from pt2logs.query import advice_cache, outcome_store
from pt2logs.query import views as _views
from pt2logs.query.macros import calls, load_macros
from pt2logs.query.sql_text import literal
from pt2logs.query.view_sql import view_statements
from pt2logs.store import recovery
from pt2logs.store.snapshot import Snapshot, take
from pt2logs.store.warehouse import Warehouse
from pt2logs.tables import TABLES

#: runs decided together (each chunk scans the transaction's files once; memory follows the chunk)
CHUNK_RUNS = 250
#: DuckDB optimizers off for the keep's connection (see :func:`_decide`)
NO_OPTIMIZERS = "join_filter_pushdown"


@dataclass
class Kept:
    txns: int = 0
    runs: int = 0
    rows: int = 0
    #: runs whose advice items were kept (pt2logs.query.advice_store)
    advice_runs: int = 0
    #: transactions left to query time: (txn, why)
    skipped: list[tuple[str, str]] = field(default_factory=list)


_VIEW = re.compile(r'^CREATE OR REPLACE (?:TEMP TABLE|VIEW) "?(\w+?)(?:_all_sources)?"? AS')
_TABLE_MACRO = re.compile(r"^CREATE OR REPLACE MACRO (\w+)\([^)]*\) AS TABLE")


@functools.cache
def _needed() -> tuple[frozenset[str], frozenset[str]]:
    """The tables and table macros rank_outcomes() reads (the others' views are not made: a keep after a
    small ingest costs what the rules read)."""
    names = load_macros()
    todo, macros = ["rank_outcomes"], set()
    while todo:
        m = todo.pop()
        if m not in macros and names[m].table:
            macros.add(m)
            todo += calls(names[m], set(names))
    text = " ".join(names[m].sql for m in macros)
    tables = {t for t in TABLES if re.search(rf"\b{t}\b", text)} | {"runs", "files"}
    return frozenset(tables), frozenset(macros)


def _wanted(stmt: str) -> bool:
    tables, macros = _needed()
    v = _VIEW.match(stmt)
    if v and v.group(1) in TABLES:
        return v.group(1) in tables
    m = _TABLE_MACRO.match(stmt)
    return m is None or m.group(1) in macros


def _decide(wh: Warehouse, snap: Snapshot, txn: str) -> tuple[object, int] | None:
    """The rank_outcomes() rows of ``txn``'s runs as a pyarrow Table, and how many runs; None when it has no
    commit in ``snap``."""
    import pyarrow as pa

    sub = snap.of_txns({txn}, payloads=False)  # (the rules read no stored text)
    if not sub.files.get("runs"):
        return None
    con = duckdb.connect()
    try:
        _views.apply_settings(con)
        # DuckDB's join filter pushdown (the chunk's runs pushed into every scan of the transaction's files) held
        # memory that grew with the transaction, not the chunk: a 250-run chunk of a 1,000-run transaction took the
        # process to 309-318 MB, 237-239 without it, the same CPU (bench/RESULTS.md, issue 31 item 7)
        with contextlib.suppress(duckdb.Error):
            con.execute(f"SET disabled_optimizers = {literal(NO_OPTIMIZERS)}")
        _views.attach_filesystem(con, wh)
        for s in view_statements(con, wh, snapshot=True, snap=sub, kept=False):
            if _wanted(s):
                con.execute(s)
        runs = [r[0] for r in con.execute("SELECT run_id FROM _live ORDER BY run_id").fetchall()]
        con.execute("CREATE TEMP TABLE _live_all AS SELECT * FROM _live")
        parts = []
        for i in range(0, len(runs), CHUNK_RUNS):
            chunk = runs[i : i + CHUNK_RUNS]
            # the views keep the rows of the runs in _live: narrowed to this chunk's
            con.execute(
                "CREATE OR REPLACE TEMP TABLE _live AS SELECT * FROM _live_all WHERE list_contains($r, run_id)",
                {"r": chunk},
            )
            parts.append(
                _views.arrow_table(
                    con,
                    f"SELECT *, {literal(txn)} AS txn FROM rank_outcomes(NULL, NULL, NULL, NULL)",
                )
            )
        table = pa.concat_tables(parts) if parts else None
        return (table, len(runs)) if table is not None else None
    finally:
        con.close()


def _write(wh: Warehouse, txn: str, table: object) -> None:
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    recovery.write_bytes(wh, outcome_store.file_path(wh, txn), buf.getvalue())


def keep(warehouse: str | Warehouse, txns: set[str] | None = None) -> Kept:
    """Keep the outcomes of ``txns`` (None: every committed transaction whose outcomes are not kept yet
    under the current rules). Returns what was kept and what was left to query time."""
    wh = warehouse if isinstance(warehouse, Warehouse) else Warehouse(warehouse)
    res = Kept()
    if not outcome_store.enabled():
        return res
    con = duckdb.connect()
    try:
        _views.attach_filesystem(con, wh)
        snap = take(wh, read_records=lambda runs: _views.commit_records(con, wh, runs))
    finally:
        con.close()
    live = outcome_store.live_commit_txns(snap.files.get("runs", []))
    if (
        txns is None
    ):  # a compaction reads the warehouse anyway: every kept file is read too, not only its ends
        outcome_store.recheck(wh)
    unread: dict[str, str] = {}
    have = outcome_store.kept_txns(wh, unread)  # (a damaged kept file is not had: written anew)
    if txns is None:
        # the kept rows of transactions a compaction replaced (their commits are in _gc): never read again
        for txn in (outcome_store.live_commit_txns(list(snap.commits)) - live) & (
            have | set(unread)
        ):
            with contextlib.suppress(FileNotFoundError):
                wh.fs.rm(outcome_store.file_path(wh, txn))
    todo = sorted((live - have) if txns is None else ((set(txns) | set(unread)) & live))
    damaged = {d.txn for d in snap.damaged}
    for txn in todo:
        if txn in damaged:
            res.skipped.append((txn, "a file of it is damaged or missing"))
            continue
        got = _decide(wh, snap, txn)
        if got is None:
            continue
        table, n = got
        _write(wh, txn, table)
        res.txns += 1
        res.runs += n
        res.rows += table.num_rows  # type: ignore[attr-defined]
    # the runs' advice items, kept the same way (pt2logs.query.advice_cache)
    res.advice_runs = advice_cache.keep(wh, snap, txns)
    return res

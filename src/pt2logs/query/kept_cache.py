"""Keeping the rows of committed transactions (:mod:`pt2logs.query.kept_rows` says what and why).

:func:`keep` asks the rules of every kind (the outcomes, the advice items) for the rows of each given
committed transaction's runs and writes them to ``<folder>/<key>/<txn>.pq``. Each transaction is read alone,
in one connection for every kind: its views list only its files (its ``runs`` file, its data files; a run's
rows are all in its live transaction, and the rules read no stored text, so not the payload store either) and
only the tables and macros the kinds read; its runs asked a few hundred at a time (the connection's live runs
narrowed to those), so memory is bounded by a transaction's chunk, not the fleet. A transaction with a damaged
or missing file keeps nothing (its runs are asked at query time, as the views see them). A kept file that is
not read (damaged) is written anew by the next keep, an ingest's as well as a compaction's. Writing is never
required for a right answer: whatever is not kept is asked at query time, so a failure here is a note, not an
error of the ingest or the compaction.
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass, field
from typing import Any

import duckdb

from pt2logs.query import frame_fill, kept_rows
from pt2logs.query import views as _views
from pt2logs.query.kept_rows import KINDS, Kind
from pt2logs.query.sql_text import literal
from pt2logs.query.view_sql import view_statements
from pt2logs.store import recovery
from pt2logs.store.snapshot import Snapshot, take
from pt2logs.store.warehouse import Warehouse
from pt2logs.tables import TABLES

#: DuckDB optimizers off for the keep's connection (see :func:`_decide`)
NO_OPTIMIZERS = "join_filter_pushdown"
#: after the first kind's pass, DuckDB's allocator gives freed memory back from this much on: the next kind's
#: pass in the same connection otherwise came on top of what the first one left cached (a 500-run transaction:
#: 265-283 MB, against 246-248 with a connection a kind; with this 227-234, the CPU of one connection a kind)
FLUSH_AFTER_FIRST = "1MB"


@dataclass
class Kept:
    #: transactions that had rows written
    txns: int = 0
    #: runs whose outcomes were kept, and their rows
    runs: int = 0
    rows: int = 0
    #: runs whose advice items were kept
    advice_runs: int = 0
    #: runs whose per-run facts were kept
    facts_runs: int = 0
    #: transactions left to query time: (txn, why)
    skipped: list[tuple[str, str]] = field(default_factory=list)


_VIEW = re.compile(r'^CREATE OR REPLACE (?:TEMP TABLE|VIEW) "?(\w+?)(?:_all_sources)?"? AS')
_TABLE_MACRO = re.compile(r"^CREATE OR REPLACE MACRO (\w+)\([^)]*\) AS TABLE")


def _wanted(stmt: str, kinds: list[Kind]) -> bool:
    """A view or table macro statement one of ``kinds`` needs (the others are not made: a keep after a small
    ingest costs what the rules read)."""
    v = _VIEW.match(stmt)
    if v and v.group(1) in TABLES:
        return any(v.group(1) in kept_rows.called(k)[1] for k in kinds)
    m = _TABLE_MACRO.match(stmt)
    return m is None or any(m.group(1) in kept_rows.called(k)[0] for k in kinds)


def _decide(
    wh: Warehouse, snap: Snapshot, txn: str, kinds: list[Kind]
) -> tuple[dict[Kind, Any], int]:
    """The rows of ``kinds`` of ``txn``'s runs, each a pyarrow Table, and how many runs (none: no commit of it
    in ``snap``)."""
    import pyarrow as pa

    sub = snap.of_txns({txn}, payloads=False)  # (the rules read no stored text)
    if not sub.files.get("runs"):
        return {}, 0
    con = duckdb.connect(config=_views.database_config())
    try:
        _views.apply_settings(con)
        # DuckDB's join filter pushdown (the chunk's runs pushed into every scan of the transaction's files) held
        # memory that grew with the transaction, not the chunk: a 250-run chunk of a 1,000-run transaction took the
        # process to 309-318 MB, 237-239 without it, the same CPU (bench/RESULTS.md, issue 31 item 7)
        with contextlib.suppress(duckdb.Error):
            con.execute(f"SET disabled_optimizers = {literal(NO_OPTIMIZERS)}")
        _views.attach_filesystem(con, wh)
        frame_fill.register(con, sub)
        for s in view_statements(con, wh, snapshot=True, snap=sub, kept=False):
            if _wanted(s, kinds):
                con.execute(s)
        runs = [r[0] for r in con.execute("SELECT run_id FROM _live ORDER BY run_id").fetchall()]
        con.execute("CREATE TEMP TABLE _live_all AS SELECT * FROM _live")
        out = {}
        for n, kind in enumerate(kinds):
            if n:  # (see FLUSH_AFTER_FIRST)
                with contextlib.suppress(duckdb.Error):
                    con.execute(
                        f"SET allocator_bulk_deallocation_flush_threshold = {literal(FLUSH_AFTER_FIRST)}"
                    )
            parts = []
            for i in range(0, len(runs), kind.chunk_runs):
                # the views keep the rows of the runs in _live: narrowed to this chunk's
                con.execute(
                    "CREATE OR REPLACE TEMP TABLE _live AS SELECT * FROM _live_all WHERE list_contains($r, run_id)",
                    {"r": runs[i : i + kind.chunk_runs]},
                )
                parts.append(_views.arrow_table(con, kept_rows.rows_sql(kind, txn)))
            if parts:
                out[kind] = pa.concat_tables(parts)
        return out, len(runs)
    finally:
        con.close()


def _write(wh: Warehouse, kind: Kind, txn: str, table: Any) -> None:
    write_file(wh, kept_rows.file_path(kind, wh, txn), table)


def write_file(wh: Warehouse, path: str, table: Any) -> None:
    """``table`` as a Parquet file written whole (store.recovery.write_bytes: a ``.<pid>.tmp`` and a rename)."""
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    recovery.write_bytes(wh, path, buf.getvalue())


def _todo(wh: Warehouse, snap: Snapshot, txns: set[str] | None) -> dict[str, list[Kind]]:
    """Each transaction to keep -> the kinds it lacks: of ``txns`` (None: every live committed one), those not
    kept or whose kept file is not read (damaged: written anew). With None, the kept rows of transactions a
    compaction replaced (their commits are in _gc, never read again) are removed."""
    live = kept_rows.live_commit_txns(snap.files.get("runs", []))
    if (
        txns is None
    ):  # a compaction reads the warehouse anyway: every kept file is read too, not only its ends
        kept_rows.recheck(wh)
    todo: dict[str, list[Kind]] = {}
    for kind in KINDS:
        unread: dict[str, str] = {}
        have = kept_rows.kept_txns(kind, wh, unread)  # (a damaged kept file is not had)
        if txns is None:
            gone = kept_rows.live_commit_txns(list(snap.commits)) - live
            for txn in gone & (have | set(unread)):
                with contextlib.suppress(FileNotFoundError):
                    wh.fs.rm(kept_rows.file_path(kind, wh, txn))
        for txn in (live - have) if txns is None else ((txns | set(unread)) & live):
            todo.setdefault(txn, []).append(kind)
    return todo


def keep(warehouse: str | Warehouse, txns: set[str] | None = None) -> Kept:
    """Keep the rows of ``txns`` (None: every committed transaction whose rows of a kind are not kept yet under
    the current rules). Returns what was kept and what was left to query time."""
    wh = warehouse if isinstance(warehouse, Warehouse) else Warehouse(warehouse)
    res = Kept()
    if not kept_rows.enabled():
        return res
    con = duckdb.connect(config=_views.database_config())
    try:
        _views.attach_filesystem(con, wh)
        snap = take(wh, read_records=lambda runs: _views.commit_records(con, wh, runs))
    finally:
        con.close()
    damaged = {d.txn for d in snap.damaged}
    for txn, kinds in sorted(_todo(wh, snap, None if txns is None else set(txns)).items()):
        if txn in damaged:
            res.skipped.append((txn, "a file of it is damaged or missing"))
            continue
        got, n = _decide(wh, snap, txn, kinds)
        for kind, table in got.items():
            _write(wh, kind, txn, table)
            if kind is kept_rows.OUTCOMES:
                res.runs += n
                res.rows += table.num_rows
            elif kind is kept_rows.ADVICE:
                res.advice_runs += n
            else:
                res.facts_runs += n
        res.txns += bool(got)
    if (
        txns is None
    ):  # the answers of transactions a compaction replaced (never read again; kept by readers)
        from pt2logs.query import kept_answers

        gone = kept_rows.live_commit_txns(list(snap.commits)) - kept_rows.live_commit_txns(
            snap.files.get("runs", [])
        )
        declined: set[str] = set()
        per_run: set[str] = set()
        for txn in gone & kept_answers.kept(wh, declined, per_run):
            with contextlib.suppress(FileNotFoundError):
                wh.fs.rm(kept_answers.file_path(wh, txn))
        for txn in gone & per_run:  # (a big transaction's file per run read)
            with contextlib.suppress(FileNotFoundError):
                wh.fs.rm(
                    wh.path(
                        kept_answers.FOLDER, kept_answers.key(), txn + kept_answers.RUNS_SUFFIX
                    ),
                    recursive=True,
                )
        for txn in gone & declined:
            with contextlib.suppress(FileNotFoundError):
                wh.fs.rm(kept_answers.none_path(wh, txn))
    return res

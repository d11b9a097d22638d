"""Keeping the advice items of committed transactions (:mod:`pt2logs.query.advice_store` says what and why).

:func:`keep` (called by :func:`pt2logs.query.outcome_cache.keep`, after the outcomes) matches the
``advice_items()`` rows of each given committed transaction's runs and writes them, with a row per run, to
``_advice/<key>/<txn>.pq``. Each transaction is read alone, as the outcomes are: a connection whose views list
only its files and only the tables and macros the items read, its runs matched a few hundred at a time.
"""

from __future__ import annotations

import contextlib
import io
import re
from typing import Any

import duckdb

from pt2logs.query import outcome_store
from pt2logs.query import views as _views
from pt2logs.query.advice_store import MACRO, called, file_path, kept_txns
from pt2logs.query.sql_text import literal
from pt2logs.query.view_sql import view_statements
from pt2logs.store import recovery
from pt2logs.tables import TABLES
from pt2logs.tables.outcomes import KEPT_ADVICE_ITEMS

#: runs matched together (each chunk scans the transaction's files once; memory follows the chunk)
CHUNK_RUNS = 500

_VIEW = re.compile(r'^CREATE OR REPLACE (?:TEMP TABLE|VIEW) "?(\w+?)(?:_all_sources)?"? AS')
_TABLE_MACRO = re.compile(r"^CREATE OR REPLACE MACRO (\w+)\([^)]*\) AS TABLE")


def _wanted(stmt: str) -> bool:
    """A view or macro statement ``advice_items()`` needs (the others are not made: a keep costs what it reads)."""
    macros, tables = called()
    v = _VIEW.match(stmt)
    if v and v.group(1) in TABLES:
        return v.group(1) in tables
    m = _TABLE_MACRO.match(stmt)
    return m is None or m.group(1) in macros


def decide(wh: Any, sub: Any, txn: str) -> Any:
    """The kept rows of ``txn``'s runs (``sub``: the snapshot narrowed to its files) as a pyarrow Table: the
    ``advice_items()`` rows and a row per run with ``id`` NULL; None when it has no runs."""
    import pyarrow as pa

    con = duckdb.connect()
    try:
        _views.apply_settings(con)
        _views.attach_filesystem(con, wh)
        for s in view_statements(con, wh, snapshot=True, snap=sub, kept=False):
            if _wanted(s):
                con.execute(s)
        runs = [r[0] for r in con.execute("SELECT run_id FROM _live ORDER BY run_id").fetchall()]
        con.execute("CREATE TEMP TABLE _live_all AS SELECT * FROM _live")
        cols = ", ".join(c.name for c in KEPT_ADVICE_ITEMS if c.name not in ("run_id", "txn"))
        parts = []
        for i in range(0, len(runs), CHUNK_RUNS):
            chunk = runs[i : i + CHUNK_RUNS]
            con.execute(
                "CREATE OR REPLACE TEMP TABLE _live AS SELECT * FROM _live_all WHERE list_contains($r, run_id)",
                {"r": chunk},
            )
            parts.append(
                _views.arrow_table(
                    con,
                    f"SELECT run_id, {cols}, {literal(txn)} AS txn FROM {MACRO}(NULL, NULL, NULL, NULL) "
                    f"UNION ALL BY NAME SELECT run_id, name AS run, {literal(txn)} AS txn FROM runs",
                )
            )
        return pa.concat_tables(parts) if parts else None
    finally:
        con.close()


def write(wh: Any, txn: str, table: Any) -> None:
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    recovery.write_bytes(wh, file_path(wh, txn), buf.getvalue())


def forget(wh: Any, txns: set[str]) -> None:
    """The kept items of transactions a compaction replaced (never read again)."""
    for txn in txns & kept_txns(wh):
        with contextlib.suppress(FileNotFoundError):
            wh.fs.rm(file_path(wh, txn))


def keep(wh: Any, snap: Any, txns: set[str] | None) -> int:
    """Keep the items of ``txns`` (None: every live committed transaction whose items are not kept yet, and
    forget those of transactions a compaction replaced) over snapshot ``snap``; how many runs were kept. A
    transaction with a damaged or missing file keeps nothing (its runs are matched when asked)."""
    if not outcome_store.enabled():
        return 0
    live = outcome_store.live_commit_txns(snap.files.get("runs", []))
    have = kept_txns(wh)
    if txns is None:
        forget(wh, outcome_store.live_commit_txns(list(snap.commits)) - live)
    damaged = {d.txn for d in snap.damaged}
    runs = 0
    for txn in sorted((live - have) if txns is None else (set(txns) & live)):
        sub = snap.of_txns({txn}, payloads=False)  # (the rules read no stored text)
        if txn in damaged or not sub.files.get("runs"):
            continue
        table = decide(wh, sub, txn)
        if table is not None:
            write(wh, txn, table)
            runs += table.filter(table["id"].is_null()).num_rows
    return runs

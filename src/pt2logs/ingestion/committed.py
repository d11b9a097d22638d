"""What the warehouse already holds, read through the views: the query side's answer to the planner.

Ingest asks two things before it plans: which input files are committed (to skip unchanged ones
without opening them) and which runs exist (to keep their tags when a run is re-ingested). Both are
reads of committed state, so they go through :func:`pt2logs.query.views.connect` like every other query.
"""

from __future__ import annotations

from typing import Any

import duckdb
import orjson

from pt2logs.query.views import connect
from pt2logs.store.warehouse import Warehouse

#: url -> (stored bytes, mtime in seconds, format, run_id, change token or None)
KnownFiles = dict[str, tuple[int, float | None, str, str, str | None]]
#: run_id -> {"tags": {...}, "n_files": n, "unreadable": {paths recorded as unreadable}}
KnownRuns = dict[str, dict[str, Any]]


def committed_files(con: duckdb.DuckDBPyConnection) -> KnownFiles:
    """The live ``files`` rows, by input URL."""
    out: KnownFiles = {}
    for url, size, mtime, fmt, run_id, token in con.execute(
        "SELECT path, bytes, epoch_us(mtime), format, run_id, change_token FROM files"
    ).fetchall():
        out[url] = (size, None if mtime is None else mtime / 1e6, fmt, run_id, token)
    return out


def committed_runs(con: duckdb.DuckDBPyConnection) -> KnownRuns:
    """The live ``runs``: their tags, file counts and the entries recorded as unreadable."""
    runs: KnownRuns = {
        run_id: {
            "tags": orjson.loads(tags) if tags else {},
            "n_files": n_files,
            "unreadable": set(),
        }
        for run_id, tags, n_files in con.execute(
            "SELECT run_id, tags, n_files FROM runs"
        ).fetchall()
    }
    for run_id, path in con.execute(
        "SELECT DISTINCT run_id, path FROM ingest_errors WHERE kind = 'unreadable'"
    ).fetchall():
        if run_id in runs:
            runs[run_id]["unreadable"].add(path)
    return runs


def committed_state(wh: Warehouse) -> tuple[KnownFiles, KnownRuns]:
    """Live files and runs of ``wh``; empty when nothing was committed yet (no DuckDB started then)."""
    if not wh.table_files("runs"):
        return {}, {}
    from pt2logs.query.views import damaged_runs

    con = connect(wh)
    try:
        damaged = damaged_runs(
            con
        )  # a file of theirs is missing or damaged: their inputs are read again
        files = {url: f for url, f in committed_files(con).items() if f[3] not in damaged}
        return files, committed_runs(con)
    finally:
        con.close()

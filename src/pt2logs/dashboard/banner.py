"""The run page's banner: how the run ended, in the words of ``pt2logs summary`` (pt2logs.reports.outcomes)."""

from __future__ import annotations

import duckdb

from pt2logs.dashboard.model import Banner
from pt2logs.reports.outcomes import (
    BAD,
    command_line,
    divergence_line,
    outcome_line,
    rank_lines,
    run_outcome,
    silence_line,
)


def outcome_banner(con: duckdb.DuckDBPyConnection, run_id: str) -> Banner | None:
    """The outcome of run ``run_id``, the silent rank, the command, the first divergence and each
    rank's outcome with its evidence line and its last trace event; None when the run has no outcome row."""
    o = run_outcome(con, run_id)
    if o is None:
        return None
    level = "bad" if o.outcome in BAD else "good" if o.outcome == "completed" else "info"
    b = Banner(level, f"Outcome: {outcome_line(o)}")
    for line in (silence_line(o), command_line(o)):
        if line:
            b.lines.append(line[:1].upper() + line[1:])
    b.lines += [f"First divergence: {divergence_line(d)}" for d in o.divergence]
    b.lines += rank_lines(o)
    return b

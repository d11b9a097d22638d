"""Run outcomes for the reports: the named queries ``run_outcomes``, ``rank_outcomes`` and
``first_divergence`` for one run, and the sentences that show them.

Every figure comes from those queries (so ``pt2logs query run_outcomes --run RUN`` shows the same);
this module only picks rows and words them. The rules live in :mod:`pt2logs.query.outcome_rules`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import duckdb

from pt2logs.query.queries import run_named

if TYPE_CHECKING:
    import pyarrow as pa

#: the named queries :func:`run_outcome` runs (a run scope copies only the tables these and the page's read)
QUERIES = ("run_outcomes", "rank_outcomes", "first_divergence", "rank_last_events")

#: outcomes that mean the run did not end well (the weekly card counts these)
BAD = ("hung", "crashed", "failed", "killed")


@dataclass
class RunOutcome:
    """How one run ended: the run's row, its ranks' rows, the first divergence between ranks."""

    run: dict[str, Any]
    ranks: list[dict[str, Any]] = field(default_factory=list)
    divergence: list[dict[str, Any]] = field(default_factory=list)
    #: each rank's last trace event (``rank_last_events``), by rank
    last_events: dict[int | None, dict[str, Any]] = field(default_factory=dict)

    @property
    def outcome(self) -> str:
        return self.run["outcome"]

    def as_dict(self) -> dict[str, Any]:
        return {**self.run, "rank_outcomes": self.ranks, "first_divergence": self.divergence}


def run_outcome(con: duckdb.DuckDBPyConnection, run_id: str) -> RunOutcome | None:
    """The outcome of run ``run_id`` (an exact id), None when the run has no row."""
    rows = [
        r
        for r in run_named(con, "run_outcomes", {"run_id": run_id}).to_pylist()
        if r["run_id"] == run_id
    ]
    if not rows:
        return None
    ranks = [
        r
        for r in run_named(con, "rank_outcomes", {"run_id": run_id}).to_pylist()
        if r["run_id"] == run_id
    ]
    div = [
        r
        for r in run_named(con, "first_divergence", {"run_id": run_id}).to_pylist()
        if r["run_id"] == run_id
    ]
    last = {
        r["rank"]: r
        for r in run_named(con, "rank_last_events", {"run_id": run_id}).to_pylist()
        if r["run_id"] == run_id
    }
    return RunOutcome(rows[0], ranks, div, last)


def last_event_text(e: dict[str, Any] | None) -> str | None:
    """``dynamo (E) of compile 0/0 at 00:23:15.697 [trace/...rank_0....log:3447]``."""
    if not e:
        return None
    cid = f" of compile {e['compile_id']}" if e.get("compile_id") else ""
    at = f" at {e['at']:%H:%M:%S.%f}"[:-3] if e.get("at") is not None else ""
    return f"{e['last_event']}{cid}{at}{_at(e.get('file'), e.get('line_no'))}"


def rank_lines(o: RunOutcome) -> list[str]:
    """One line per rank: its outcome, why, the deciding line and its last trace event."""
    out = []
    for r in o.ranks:
        who = f"Rank {r['rank']}" if r["rank"] is not None else "The process"
        last = last_event_text(o.last_events.get(r["rank"]))
        out.append(
            f"{who}: {r['outcome']}: {r['why']}{_at(r.get('evidence_file'), r.get('evidence_line'))}"
            + (f"; last trace event {last}" if last else "")
        )
    return out


def _at(file: str | None, line: int | None) -> str:
    return f" [{file}:{line}]" if file and line else ""


def outcome_line(o: RunOutcome) -> str:
    """``hung: rank 1: timed out in recv (timeout 20 s) [stderr.txt:9]``."""
    r = o.run
    return f"{r['outcome']}: {r['why']}{_at(r.get('evidence_file'), r.get('evidence_line'))}"


def silence_line(o: RunOutcome) -> str | None:
    """``rank 0 went silent first (its last trace event 21.7 s before the run's end, from the stderr capture)``;
    None for a run of one rank or one that completed, and when no rank went silent (the first rank's last trace
    event less than a second before the end: every rank logged until the end)."""
    r = o.run
    if (
        (r.get("ranks") or 0) < 2
        or r.get("silent_first_rank") is None
        or r["outcome"] == "completed"
    ):
        return None
    if r.get("silent_s") is not None and r["silent_s"] < 1:
        return None
    gap = (
        f": last trace event {r['silent_s']:g} s before the end"
        if r.get("silent_s") is not None
        else ""
    )
    src = f" (end from the {r['run_end_from']})" if r.get("run_end_from") else ""
    return f"rank {r['silent_first_rank']} went silent first{gap}{src}"


def command_line(o: RunOutcome) -> str | None:
    """``python train.py --x 'a b'``: exit 3 after 12.1 s (recorded by pt2logs run); None when not recorded."""
    r = o.run
    if not r.get("command"):
        return None
    code = r.get("exit_code")
    how = (
        f"exit code {code}"
        if code is None or code >= 0
        else f"ended by signal {-code} (exit code {code})"
    )
    wall = f" after {r['wall_s']:g} s" if r.get("wall_s") is not None else ""
    return f"{r['command']}: {how}{wall}"


def divergence_line(d: dict[str, Any]) -> str:
    """``compile 0/0 (step 1) collectives: rank 0 all_reduce | rank 1 none``."""

    def side(ranks: list[int], val: str) -> str:
        return f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}: {val}"

    cid = f"compile {d['compile_id']} " if d.get("compile_id") else ""
    return (
        f"{cid}(step {d['step']}) differs in {d['what']}: "
        f"{side(d['ranks_a'], d['side_a'])} | {side(d['ranks_b'], d['side_b'])}"
    )


def merge_outcomes(table: pa.Table, ranks: list[dict[str, Any]]) -> pa.Table:
    """``table`` (one row per rank, a ``rank`` column) with each rank's ``outcome`` and ``why`` added (a kept
    answer's rows, pt2logs.query.answer_rows.Rows: the same, without pyarrow)."""
    by_rank = {r["rank"]: r for r in ranks}
    ranks_col = table.column("rank").to_pylist() if "rank" in table.column_names else []
    outcome = [by_rank.get(k, {}).get("outcome") for k in ranks_col]
    why = [by_rank.get(k, {}).get("why") for k in ranks_col]
    if hasattr(table, "with_columns"):
        return table.with_columns({"outcome": outcome, "why": why})
    import pyarrow as pa

    return table.append_column("outcome", pa.array(outcome, pa.string())).append_column(
        "why", pa.array(why, pa.string())
    )


def differing_ranks(table_rows: list[dict[str, Any]], o: RunOutcome | None) -> set[int]:
    """Ranks that differ: in their compile facts (``rank_divergence``), on the minority side of the
    first divergence, or in how they ended (an outcome that is not the most common one, or a hang)."""
    out = {r["rank"] for r in table_rows if r.get("differs_in")}
    if o is None:
        return out
    for d in o.divergence:
        out.update(d["ranks_b"])
    outcomes = [r["outcome"] for r in o.ranks if r["rank"] is not None]
    if outcomes:
        common = max(sorted(set(outcomes)), key=lambda x: (outcomes.count(x), x == "completed"))
        out.update(
            r["rank"]
            for r in o.ranks
            if r["rank"] is not None and (r["outcome"] != common or r["outcome"] == "hung")
        )
    return out


def hung_ranks(o: RunOutcome | None) -> list[int]:
    return (
        []
        if o is None
        else [r["rank"] for r in o.ranks if r["outcome"] == "hung" and r["rank"] is not None]
    )

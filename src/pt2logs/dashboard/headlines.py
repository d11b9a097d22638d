"""Headline strips: the figures above the charts, and the regressions they flag.

A dashboard names one in its registry entry (``headline = "week_over_week"``). Whether a figure
regressed is decided by :func:`pt2logs.reports.diff.regressed`, the rule ``pt2logs diff
--fail-on-regression`` uses, so the page and the CI gate agree.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import duckdb

from pt2logs.dashboard.model import Headline, Metric, Selection
from pt2logs.dashboard.shaping import template_filter
from pt2logs.query.queries import run_named
from pt2logs.reports.diff import change_pct, improved, regressed


def _fmt_s(s: float | None) -> str:
    if s is None:
        return "–"
    if s < 120:
        return f"{s:,.1f} s"
    if s < 7200:
        return f"{s / 60:,.1f} min"
    return f"{s / 3600:,.1f} h"


def _num(v: float | None, seconds: bool = False) -> str:
    if v is None:
        return "–"
    return _fmt_s(v) if seconds else (f"{v:,.0f}" if float(v).is_integer() else f"{v:,.2f}")


def week_over_week(con: duckdb.DuckDBPyConnection, sel: Selection) -> Headline:
    """This week (7 days to --until or now) against the 7 days before; regressions flagged, by the
    diff gate's rule, only when both weeks have runs (an empty week before is said, not compared)."""
    p = {"until": sel.until or sel.now, "tag": sel.tag}
    this, last = run_named(con, "dash_week_over_week", p).to_pylist()
    last_day = this["window_end"] - dt.timedelta(microseconds=1)
    h = Headline(
        title=f"This week ({this['window_start']:%a %b %d} to {last_day:%a %b %d}) against the 7 days before"
    )
    h.metrics.append(Metric("Runs", _num(this["runs"]), f"{_num(last['runs'])} the week before"))
    pct = sel.threshold
    for key, label, seconds in (
        ("compile_s", "Compile time", True),
        ("recompiles", "Recompiles", False),
        ("graph_breaks", "Graph breaks", False),
        ("failures", "Failed compiles", False),
    ):
        a, b = last[key] or 0, this[key] or 0
        m = Metric(label, _num(b, seconds))
        if this["runs"] and last["runs"]:
            pa_, pb = a / last["runs"], b / this["runs"]
            m.detail = f"{_num(pb, seconds)} per run (was {_num(pa_, seconds)})"
            ch = None if pa_ == 0 else 100.0 * (pb - pa_) / pa_  # as shown
            m.change = (
                "new"
                if pa_ == 0 and pb > 0
                else "no change"
                if pb == pa_
                else f"{ch:+.0f}% per run"
            )
            # the diff gate's rule; the direction test only matters for a negative --threshold
            worse = pb > pa_ and regressed(change_pct(pa_, pb), pct)
            better = pb < pa_ and improved(change_pct(pa_, pb), pct)
            m.status = "worse" if worse else "better" if better else "same"
            what = f"{label.lower()} per run {'up' if pb > pa_ else 'down'}"
            span = f"({_num(pa_, seconds)} → {_num(pb, seconds)})"
            if worse:
                h.flags.append(f"{what} {'' if pa_ == 0 else f'{abs(ch):.0f}% '}{span}")
            elif better:
                h.good.append(f"{what} {abs(ch):.0f}% {span}")
        else:
            m.detail = f"{_num(a, seconds)} the week before"
        h.metrics.append(m)
    if this["runs"] and not last["runs"]:
        h.note = "No runs in the week before: nothing to compare with."
    elif not this["runs"]:
        h.note = "No runs in the last 7 days" + (
            f" (the week before: {last['runs']:,})." if last["runs"] else "."
        )
    # "new" needs something to be new against: with no runs the week before, nothing is flagged
    new = (this.get("new_break_sites") or 0) if last["runs"] else 0
    if new:
        sites = run_named(con, "dash_new_break_sites", {**p, "limit": 5}).to_pylist()
        names = "; ".join(
            f"{s['gb_type']} at {template_filter(s['location'], 'file')} ({s['occurrences']}×)"
            for s in sites
        )
        h.flags.append(
            f"{new} new graph-break site{'s' if new > 1 else ''} this week: {names}{' …' if new > 5 else ''}"
        )
        h.metrics[3].detail += f" · {new} new site{'s' if new > 1 else ''}"
    return h


def run_overview(con: duckdb.DuckDBPyConnection, sel: Selection) -> Headline:
    o = run_named(con, "run_overview", {"run_id": sel.run_id}).to_pylist()[0]
    ranks = max(1, o["ranks"] or 1)
    # counts add up the run's ranks: say so, and give the busiest rank's figure
    added = f" · {ranks} ranks added up, at most {{}} on one" if ranks > 1 else ""
    h = Headline(title=f"{o['run']} · {o['run_id']}")
    h.metrics = [
        Metric(
            "Compile time",
            _num(o["compile_s"], True),
            (
                f"+ {_num(o['bwd_compile_s'], True)} backward"
                if o["bwd_compiles"]
                else "forward frames"
            )
            + added.format(_num(o["compile_s_per_rank_max"], True)),
        ),
        Metric(
            "Compiles",
            _num(o["compiles"]),
            f"{o['frames']:,} frames" + added.format(_num(o["compiles_per_rank_max"])),
        ),
        Metric(
            "Recompiles",
            _num(o["recompiles"]),
            f"{o['limit_hits']} recompile-limit hits",
            status="worse" if o["limit_hits"] else "",
        ),
        Metric("Graph breaks", _num(o["graph_breaks"]), f"{o['break_sites']} sites"),
        Metric(
            "Kernels",
            _num(o["kernels"]),
            f"{o['cache_hits']} of {o['cache_lookups']} cache lookups hit",
        ),
        Metric("Failed compiles", _num(o["failures"]), "", status="worse" if o["failures"] else ""),
        Metric(
            "Wall time",
            _num(o["wall_s"], True),
            f"{ranks} rank{'s' if ranks > 1 else ''} · torch {o['torch'] or '?'}",
        ),
    ]
    if o["limit_hits"]:
        h.flags.append(
            f"the recompile limit was hit {o['limit_hits']} time(s): those frames ran without compiling"
        )
    if o["failures"]:
        h.flags.append(f"{o['failures']} compile(s) failed")
    if o["errors"]:
        h.flags.append(f"{o['errors']} ingest error(s): parts of the logs could not be read")
    return h


HEADLINES: dict[str, Callable[[duckdb.DuckDBPyConnection, Selection], Headline]] = {
    "week_over_week": week_over_week,
    "run_overview": run_overview,
    "none": lambda con, sel: Headline(),
}

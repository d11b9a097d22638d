"""Building a page: every section's query run with one selection, and its chart spec made.

:func:`build` returns a :class:`~pt2logs.dashboard.model.Page` (data, no HTML); each card says
which ``pt2logs query`` command gives exactly the rows it draws.
"""

from __future__ import annotations

import datetime as dt
import shlex
import time
import weakref
from typing import Any

import altair as alt
import duckdb
import pyarrow as pa

from pt2logs.dashboard.banner import outcome_banner
from pt2logs.dashboard.charts import ChartContext, KeepMissing, fill
from pt2logs.dashboard.headlines import HEADLINES
from pt2logs.dashboard.model import Card, Page, Selection
from pt2logs.dashboard.registry import Section, get_dashboard
from pt2logs.dashboard.shaping import chart_spec
from pt2logs.query.queries import QueryError, get_query, parse_since, run_named
from pt2logs.query.sql_text import ident
from pt2logs.reports.runs import check_selection, resolve_run

WIDTH, WIDE = 495, 1040  # total chart widths (labels included) of a half / full-width card
MAX_ROWS = 5000  # Altair's default limit: never raised, never disabled


def _command(name: str, params: dict[str, Any]) -> str:
    parts = ["pt2logs", "query", name]
    for k, v in params.items():
        if v is None:
            continue
        v = v.isoformat(timespec="seconds") if isinstance(v, dt.datetime) else str(v)
        flag = {"since": "--since", "until": "--until", "tag": "--tag", "run_id": "--run"}.get(k)
        parts += [flag, v] if flag else ["-p", k, v]
    return " ".join(shlex.quote(p) for p in parts)


def _params(query: str, sel: Selection, static: dict[str, Any]) -> dict[str, Any]:
    declared = {p.name for p in get_query(query).params}
    given = {
        "run_id": sel.run_id,
        "since": None if sel.run_id else sel.since,
        "until": None if sel.run_id else sel.until,
        "tag": None if sel.run_id else sel.tag,
        "by": sel.by,
    }
    out = {k: v for k, v in given.items() if k in declared and v is not None}
    out.update(static)
    return out


def _x_domain(t: pa.Table, sel: Selection) -> list[float] | None:
    if sel.run_id or sel.since is None or "bucket" not in t.column_names or t.num_rows == 0:
        return None
    week = t["bucket"][0].as_py() == "week"
    start = sel.since.astimezone(dt.timezone.utc).date()
    if week:
        start -= dt.timedelta(days=start.weekday())
    end = ((sel.until or sel.now) - dt.timedelta(microseconds=1)).astimezone(
        dt.timezone.utc
    ).date() + dt.timedelta(days=1)
    ms = [
        dt.datetime.combine(d, dt.time(), dt.timezone.utc).timestamp() * 1000 for d in (start, end)
    ]
    return ms


def build_card(con: duckdb.DuckDBPyConnection, s: Section, sel: Selection, runs: int) -> Card:
    q = get_query(s.query)
    subs = {"by": sel.by or "", "run": sel.run_name or ""}
    params = _params(s.query, sel, s.params)
    card = Card(
        s.key,
        fill(s.title or q.title, subs),
        fill(s.question or q.question, subs),
        _command(s.query, params),
        wide=s.wide,
    )
    if runs == 0:
        card.empty = "No runs match the filters above, so there is nothing to count."
        return card
    try:
        t = run_named(con, s.query, params)
    except QueryError as e:
        card.error = str(e)
        return card
    card.rows, card.data = t.num_rows, t
    if t.num_rows == 0:
        n = "this run" if sel.run_id else f"{runs:,} run{'s' if runs != 1 else ''}"
        card.empty = f"{s.empty or 'The query returned no rows.'} (Checked {n}.)"
        return card
    ctx = ChartContext(WIDE if s.wide else WIDTH, subs)
    ctx.x_domain = _x_domain(t, sel)
    try:
        card.spec = chart_spec(t, s.chart, ctx)
    except alt.MaxRowsError:
        card.error = (
            f"{s.query} returned {t.num_rows:,} rows, too many to chart (limit {MAX_ROWS:,}): "
            "the section's query must aggregate more (top N, coarser buckets)."
        )
    return card


def build(
    con: duckdb.DuckDBPyConnection,
    dashboard: str | None = None,
    *,
    since: str | dt.datetime | None = "4w",
    until: str | dt.datetime | None = None,
    tag: str | None = None,
    by: str | None = None,
    run: str | None = None,
    warehouse: str = "",
    threshold: float = 10.0,
    now: dt.datetime | None = None,
) -> Page:
    """Run every section's query and build its chart. ``run`` makes the one-run page."""
    t0 = time.perf_counter()
    now = now or dt.datetime.now(dt.timezone.utc)
    name = dashboard or ("run" if run else "weekly")
    d = get_dashboard(name)
    r = resolve_run(con, run) if run or d.headline == "run_overview" else None
    if r is None:
        check_selection(con, None, tag)  # a tag no run has is a mistake; an empty week is an answer
    sel = Selection(
        _time(since, now),
        _time(until, now),
        tag,
        by,
        r.run_id if r else None,
        r.name if r else None,
        now,
        threshold,
    )
    scope_rows = run_named(con, "dash_selection", _params("dash_selection", sel, {})).to_pylist()[0]
    runs = scope_rows["runs"]
    headline = HEADLINES[d.headline](con, sel)
    cards = [
        c
        for s in d.sections
        if s.when in (None, "rows") or (s.when == "by") == bool(by)
        if not s.needs
        or _holds(con, s.needs)  # (a "rows" section that would return none: left out)
        if (c := build_card(con, s, sel, runs)).rows or c.error or s.when != "rows"
    ]
    filters = [
        (k, v)
        for k, v in (
            ("since", _show_time(sel.since) if not r else None),
            ("until", _show_time(sel.until) if not r else None),
            ("tag", tag if not r else None),
            ("by", by),
            ("run", f"{r.name} ({r.run_id})" if r else None),
        )
        if v
    ]
    subs = KeepMissing({"run": r.name if r else "", "by": by or ""})
    banner = outcome_banner(con, r.run_id) if r else None
    return Page(
        name,
        d.title.format_map(subs),
        d.description,
        now,
        warehouse,
        _scope(scope_rows, r is not None),
        filters,
        headline,
        cards,
        time.perf_counter() - t0,
        banner,
    )


#: per connection: the snapshot its views read, and which tables hold a row in it (asked once per snapshot:
#: serve builds the page at every request, ~4 ms an ask at 10,000 runs)
_HELD: weakref.WeakKeyDictionary[
    duckdb.DuckDBPyConnection, tuple[Any, dict[tuple[str, ...], bool]]
] = weakref.WeakKeyDictionary()


def _holds(con: duckdb.DuckDBPyConnection, tables: tuple[str, ...]) -> bool:
    """Whether one of ``tables`` holds a row (a view over no file answers at once: the vLLM cards of a fleet
    without vLLM runs cost ~30 ms a page at 10,000 runs, to be left out)."""
    from pt2logs.query.views import snapshot_of

    try:
        snap = snapshot_of(con)
    except KeyError:  # (views made without a snapshot: asked each time)
        snap = None
    got = _HELD.get(con)
    if got is None or snap is None or got[0] is not snap:
        got = (snap, {})
        if snap is not None:
            _HELD[con] = got
    if tables not in got[1]:
        sql = " OR ".join(f"EXISTS (SELECT 1 FROM {ident(t)})" for t in tables)
        got[1][tables] = bool(con.execute(f"SELECT {sql}").fetchall()[0][0])
    return got[1][tables]


def _time(v: str | dt.datetime | None, now: dt.datetime) -> dt.datetime | None:
    return v if isinstance(v, dt.datetime) or v is None else parse_since(v, now)


def _show_time(t: dt.datetime | None) -> str | None:
    if t is None:
        return None
    t = t.astimezone(dt.timezone.utc)
    return (
        t.strftime("%Y-%m-%d")
        if (t.hour, t.minute, t.second) == (0, 0, 0)
        else t.strftime("%Y-%m-%d %H:%M UTC")
    )


def _scope(s: dict[str, Any], one_run: bool) -> str:
    if not s["runs"]:
        return "no runs match"
    first, last = (_show_time(s[k]) for k in ("first_started", "last_started"))
    when = first if one_run else (f"{first[:10]} to {last[:10]}" if first and last else "")
    n = "1 run" if s["runs"] == 1 else f"{s['runs']:,} runs"
    bits = [
        n if not one_run else "",
        f"started {when}" if one_run else when,
        f"torch {s['torch_versions']}" if s["torch_versions"] else "",
    ]
    return " · ".join(b for b in bits if b)

"""Dashboards: named queries drawn as Altair charts, in one self-contained HTML file.

A dashboard is a registry entry, ``dashboards/<name>.toml``: a title, a headline strip and a list
of sections, each one named query (``queries/*.sql``) plus a chart spec (a chart *kind* from
:data:`CHARTS` and the fields it draws). Adding a chart is one ``[[sections]]`` entry; see
``dashboards/README.md``. The numbers are exactly those of ``pt2logs query NAME`` with the same
filters (every card says which command gives them).

Aggregation happens in DuckDB: every query a section uses returns at most a few hundred rows
(top N, per-day buckets), whatever the warehouse size. Altair's 5,000-row limit stays on.

Safety: every string from a log is data. Outside Vega it goes through :func:`html.escape`;
chart specs are embedded as JSON with ``<``, ``>`` and ``&`` escaped (so no ``</script>`` can end
the block); Vega draws text as SVG text nodes; tooltips are HTML-escaped by our own ``sanitize``;
and a Content-Security-Policy with script hashes stops any script the page did not ship.

Offline: vega, vega-lite and vega-embed come from ``vl_convert.javascript_bundle()`` (the copy
vl-convert-python bundles), inlined once per page and cached on disk (building it takes seconds).

The core returns data (:class:`Page`, HTML text, image bytes); :mod:`pt2logs.cli_dashboard` writes.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import html
import json
import os
import re
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import altair as alt
import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from pt2logs import __version__
from pt2logs.queries import QueryError, get_query, parse_since, run_named
from pt2logs.report import change_pct, improved, regressed, resolve_run

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_KEY = re.compile(r"^[a-z][a-z0-9_]*$")
WIDTH, WIDE = 495, 1040  # total chart widths (labels included) of a half / full-width card
MAX_ROWS = 5000  # Altair's default limit: never raised, never disabled


class DashboardError(Exception):
    """A user-facing problem: unknown dashboard, a registry entry that does not make sense."""


# ---------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class Section:
    key: str
    query: str
    chart: dict[str, Any]
    title: str = ""
    question: str = ""
    empty: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    when: str | None = None  # "by" / "no_by": only with / without --by
    wide: bool = False


@dataclass
class Dashboard:
    name: str
    title: str
    description: str
    headline: str
    sections: list[Section]
    path: Path


def dashboard_dirs() -> list[Path]:
    """The repo's dashboards/ (development) or the installed copy."""
    here = Path(__file__).resolve()
    dirs = [here.parents[2] / "dashboards", here.parent / "_data" / "dashboards"]
    return [d for d in dirs if d.is_dir()]


def parse_dashboard(path: Path) -> Dashboard:
    try:
        d = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise DashboardError(f"{path}: {e}") from None
    secs = []
    for i, s in enumerate(d.get("sections", [])):
        where = f"{path.name} section {i + 1}"
        unknown = set(s) - set(Section.__dataclass_fields__)
        if unknown:
            raise DashboardError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        for k in ("key", "query", "chart"):
            if k not in s:
                raise DashboardError(f"{where}: needs a {k!r}")
        if not _KEY.match(s["key"]):
            raise DashboardError(f"{where}: key {s['key']!r} must be lowercase letters, digits and _")
        if s["chart"].get("kind") not in CHARTS:
            raise DashboardError(f"{where}: chart kind {s['chart'].get('kind')!r} is not one of {', '.join(CHARTS)}")
        missing = [k for k in CHARTS[s["chart"]["kind"]].required if k not in s["chart"]]
        if missing:
            raise DashboardError(f"{where}: a {s['chart']['kind']} chart needs {', '.join(missing)}")
        if s.get("when") not in (None, "by", "no_by"):
            raise DashboardError(f"{where}: when must be 'by' or 'no_by'")
        secs.append(Section(**s))
    keys = [(s.key, s.when) for s in secs]
    if len(set(keys)) != len(keys):
        raise DashboardError(f"{path.name}: section keys repeat")
    if d.get("headline", "none") not in HEADLINES:
        raise DashboardError(f"{path.name}: headline {d.get('headline')!r} is not one of {', '.join(HEADLINES)}")
    return Dashboard(path.stem, d.get("title", path.stem), d.get("description", ""), d.get("headline", "none"), secs, path)


def load_dashboards() -> dict[str, Dashboard]:
    out: dict[str, Dashboard] = {}
    for d in dashboard_dirs():
        for p in sorted(d.glob("*.toml")):
            out.setdefault(p.stem, parse_dashboard(p))
    return out


def get_dashboard(name: str) -> Dashboard:
    ds = load_dashboards()
    if name not in ds:
        raise DashboardError(f"no dashboard {name!r}; there are: {', '.join(ds) or 'none'} (dashboards/*.toml)")
    return ds[name]


# ---------------------------------------------------------------------------- chart kinds


@dataclass
class ChartKind:
    build: Callable[[pa.Table, dict[str, Any], ChartContext], alt.TopLevelMixin]
    required: tuple[str, ...]


@dataclass
class ChartContext:
    width: int
    subs: dict[str, str]  # {by} etc. in titles
    x_domain: list[float] | None = None  # time charts: ms since epoch, [from, to]


CHARTS: dict[str, ChartKind] = {}


def chart_kind(name: str, *required: str) -> Callable:
    def deco(fn: Callable) -> Callable:
        CHARTS[name] = ChartKind(fn, required)
        return fn

    return deco


def _sub(text: str | None, ctx: ChartContext) -> str:
    return (text or "").format_map(_Missing(ctx.subs))


class _Missing(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _tooltips(spec: dict[str, Any], ctx: ChartContext) -> list[alt.Tooltip]:
    out = []
    for t in spec.get("tooltip", []):
        kind = t.get("type")
        if kind == "date":
            out.append(alt.Tooltip(f"{t['field']}:T", title=_sub(t.get("title"), ctx), timeUnit="utcyearmonthdate"))
        elif kind == "time":
            out.append(alt.Tooltip(f"{t['field']}:T", title=_sub(t.get("title"), ctx), timeUnit="utcyearmonthdatehoursminutes"))
        elif "format" in t:
            out.append(alt.Tooltip(f"{t['field']}:Q", title=_sub(t.get("title"), ctx), format=t["format"]))
        else:
            out.append(alt.Tooltip(t["field"], title=_sub(t.get("title"), ctx)))
    return out


def _color(spec: dict[str, Any], ctx: ChartContext, order: str | None = None) -> alt.Color:
    sort: Any = alt.EncodingSortField(field=order, op="min") if order else "ascending"
    return alt.Color(f"{spec['color']}:N", title=_sub(spec.get("color_title"), ctx) or None, sort=sort,
                     legend=alt.Legend(orient="top", direction="horizontal", labelLimit=260, columns=4))


_FIT = alt.AutoSizeParams(type="fit-x", contains="padding")
LABELS = 300  # px: the most a row label takes before it is cut with "…" (the tooltip has it whole)


def _plot_width(t: pa.Table, label: str, ctx: ChartContext) -> int:
    """Width left for the plot of a chart with row labels: ``fit`` sizing does not combine with
    step heights, so estimate the labels (11 px font, ~6.3 px a character)."""
    longest = max((len(v) for v in t[label].to_pylist() if v), default=10)
    return int(ctx.width - min(LABELS, longest * 6.3 + 12) - 20)


def _room(t: pa.Table, spec: dict[str, Any]) -> alt.Scale | Any:
    """Room right of the longest bar for its text label."""
    if not spec.get("text") or t.num_rows == 0:
        return alt.Undefined
    top = pc.max(t[spec["x"]]).as_py() or 0
    return alt.Scale(domainMax=float(top) * 1.3, nice=False) if top > 0 else alt.Undefined


def _count_axis(t: pa.Table, spec: dict[str, Any]) -> alt.Axis | Any:
    """Whole-number ticks for counts (no 0.5 of a graph break)."""
    if not pa.types.is_integer(t.schema.field(spec["x"]).type) or t.num_rows == 0:
        return alt.Undefined
    top = pc.max(t[spec["x"]]).as_py() or 1
    return alt.Axis(format="d", tickMinStep=1, tickCount=int(min(top, 8)))


def _stack_colors(spec: dict[str, Any]) -> alt.Scale | Any:
    if not all("color" in p for p in spec["stack"]):
        return alt.Undefined
    return alt.Scale(domain=[p["title"] for p in spec["stack"]], range=[p["color"] for p in spec["stack"]])


@chart_kind("hbar", "label", "x")
def hbar(t: pa.Table, spec: dict[str, Any], ctx: ChartContext) -> alt.TopLevelMixin:
    """Horizontal bars, longest first: one per row, labelled by ``label`` (a template over the
    row); ``stack`` splits each bar into columns; ``text`` writes a figure at the bar's end."""
    x_title = _sub(spec.get("x_title"), ctx)
    y = alt.Y("_label:N", title=None, sort=alt.EncodingSortField(field=spec["x"], op="max", order="descending"),
              axis=alt.Axis(labelLimit=LABELS))
    base = alt.Chart(t)
    tips = _tooltips(spec, ctx)
    if spec.get("stack"):
        names = {s["field"]: s["title"] for s in spec["stack"]}
        bars = base.transform_fold(list(names), as_=["_col", "_n"]).transform_calculate(
            _part=" + ".join(f"(datum._col === {json.dumps(k)} ? {json.dumps(v)} : '')" for k, v in names.items())
        ).transform_calculate(_pos=f"indexof({json.dumps(list(names))}, datum._col)").mark_bar().encode(
            y=y, x=alt.X("_n:Q", title=x_title, stack="zero", scale=_room(t, spec), axis=_count_axis(t, spec)),
            color=alt.Color("_part:N", title=_sub(spec.get("stack_title"), ctx) or None, sort=list(names.values()),
                            legend=alt.Legend(orient="top", direction="horizontal"), scale=_stack_colors(spec)),
            order=alt.Order("_pos:Q"),
            tooltip=tips + [alt.Tooltip("_part:N", title=_sub(spec.get("stack_title"), ctx) or "Part"),
                            alt.Tooltip("_n:Q", title="Count")])
    else:
        enc = {"y": y, "x": alt.X(f"{spec['x']}:Q", title=x_title, scale=_room(t, spec), axis=_count_axis(t, spec)),
               "tooltip": tips}
        if spec.get("color"):
            enc["color"] = _color(spec, ctx)
        bars = base.mark_bar(color="#4c78a8").encode(**enc)
    layers = [bars]
    if spec.get("text"):
        layers.append(base.mark_text(align="left", baseline="middle", dx=4, fontSize=10, color="#555").encode(
            y=y, x=alt.X(f"{spec['x']}:Q"), text="_text:N", tooltip=tips))
    return alt.layer(*layers).properties(width=_plot_width(t, "_label", ctx), height=alt.Step(22))


def _time_x(spec: dict[str, Any], ctx: ChartContext) -> alt.X:
    # domainMin/Max, not domain: with x2, an explicit domain is unioned with the data (a warning)
    scale = (alt.Scale(type="utc", domainMin=ctx.x_domain[0], domainMax=ctx.x_domain[1]) if ctx.x_domain
             else alt.Scale(type="utc"))
    return alt.X(f"{spec['x']}:T", title=None, scale=scale,
                 axis=alt.Axis(labelExpr="utcFormat(datum.value, '%b %d')", labelAngle=0, grid=False))


@chart_kind("time_bars", "x", "x2", "y", "color")
def time_bars(t: pa.Table, spec: dict[str, Any], ctx: ChartContext) -> alt.TopLevelMixin:
    """Stacked bars over time: one bar per period (``x``..``x2``), stacked by ``color``."""
    order = spec.get("order")
    stack = alt.Chart(t).transform_stack(
        stack=spec["y"], groupby=[spec["x"]], as_=["_y0", "_y1"],
        sort=[alt.SortField(order or spec["color"], order="ascending")])
    enc: dict[str, Any] = {
        "x": _time_x(spec, ctx), "x2": f"{spec['x2']}:T",
        "y": alt.Y("_y0:Q", title=_sub(spec.get("y_title"), ctx)), "y2": "_y1:Q",
        "color": _color(spec, ctx, order=order), "tooltip": _tooltips(spec, ctx),
    }
    bars = stack.mark_bar(stroke="white", strokeWidth=0.5, clip=True).encode(**enc)
    return bars.properties(width=ctx.width, height=240, autosize=_FIT)


@chart_kind("time_lines", "x", "y", "color")
def time_lines(t: pa.Table, spec: dict[str, Any], ctx: ChartContext) -> alt.TopLevelMixin:
    """One line per ``color`` value over time, with a point (and its tooltip) per period."""
    enc = {"x": _time_x(spec, ctx), "y": alt.Y(f"{spec['y']}:Q", title=_sub(spec.get("y_title"), ctx)),
           "color": _color(spec, ctx, order=spec.get("order")), "tooltip": _tooltips(spec, ctx)}
    base = alt.Chart(t).encode(**enc)
    return alt.layer(base.mark_line(clip=True), base.mark_point(filled=True, size=50, clip=True)).properties(
        width=ctx.width, height=260, autosize=_FIT)


@chart_kind("gantt", "y", "x", "x2", "color", "sort")
def gantt(t: pa.Table, spec: dict[str, Any], ctx: ChartContext) -> alt.TopLevelMixin:
    """Bars from ``x`` to ``x2`` on rows ``y`` (ordered by ``sort``), coloured by ``color``."""
    y = alt.Y(f"{spec['y']}:N", title=None, sort=alt.EncodingSortField(field=spec["sort"], op="min"),
              axis=alt.Axis(labelLimit=LABELS))
    bars = alt.Chart(t).mark_bar(height={"band": 0.7}).encode(
        y=y, x=alt.X(f"{spec['x']}:Q", title=_sub(spec.get("x_title"), ctx)), x2=f"{spec['x2']}:Q",
        color=_color(spec, ctx, order=spec.get("order")), tooltip=_tooltips(spec, ctx))
    return bars.properties(width=_plot_width(t, spec["y"], ctx), height=alt.Step(18))


@chart_kind("chain", "y", "x", "color")
def chain(t: pa.Table, spec: dict[str, Any], ctx: ChartContext) -> alt.TopLevelMixin:
    """A row per ``y`` (a frame): its steps along ``x`` joined by a line, coloured by ``color``."""
    tips = _tooltips(spec, ctx)
    y = alt.Y(f"{spec['y']}:N", title=None, sort=None, axis=alt.Axis(labelLimit=LABELS))
    x = alt.X(f"{spec['x']}:O", title=_sub(spec.get("x_title"), ctx), axis=alt.Axis(labelAngle=0))
    base = alt.Chart(t)
    layers = [base.mark_line(color="#bbb", strokeWidth=2).encode(y=y, x=x, detail=f"{spec['y']}:N", tooltip=tips),
              base.mark_point(filled=True, size=160, opacity=1).encode(y=y, x=x, color=_color(spec, ctx), tooltip=tips)]
    if spec.get("text"):
        layers.append(base.mark_text(dy=-12, fontSize=9, color="#555").encode(
            y=y, x=x, text=f"{spec['text']}:N", tooltip=tips))
    return alt.layer(*layers).properties(width=_plot_width(t, spec["y"], ctx), height=alt.Step(34))


# ---------------------------------------------------------------------------- data for charts

_FIELD = re.compile(r"\{(\w+)(?:\|(\w+))?\}")


def _filter(value: Any, how: str | None) -> str:
    if value is None:
        return "" if how == "rank" else "?"
    s = str(value)
    if how == "file":  # a path (with :line) without its folders
        return re.split(r"[\\/]", s)[-1]
    if how == "rank":
        return f" (rank {s})"
    return s


def _template(rows: list[dict[str, Any]], template: str, unique: bool) -> list[str]:
    out, seen = [], {}
    for r in rows:
        s = _FIELD.sub(lambda m, r=r: _filter(r.get(m.group(1)), m.group(2)), template)
        s = s if len(s) <= 90 else s[:89] + "…"
        if unique:
            seen[s] = seen.get(s, 0) + 1
            s = s if seen[s] == 1 else f"{s} ({seen[s]})"
        out.append(s)
    return out


def chart_data(t: pa.Table, spec: dict[str, Any]) -> pa.Table:
    """The query result as Vega wants it: decimals as floats, dates as ``YYYY-MM-DD`` (read as
    UTC by browsers), times as ISO UTC; plus ``_label`` / ``_text`` when the spec asks."""
    cols = {}
    for name, col in zip(t.column_names, t.columns, strict=True):
        ty = col.type
        if pa.types.is_decimal(ty):
            col = pc.cast(col, pa.float64())
        elif pa.types.is_date(ty):
            col = pc.strftime(pc.cast(col, pa.timestamp("s")), format="%Y-%m-%d")
        elif pa.types.is_timestamp(ty):
            # whole seconds are enough for a chart; a plain cast to ms would refuse µs values
            col = pc.strftime(pc.cast(col, pa.timestamp(ty.unit, tz="UTC")) if ty.tz else col, format="%Y-%m-%dT%H:%M:%SZ")
        elif pa.types.is_list(ty) or pa.types.is_struct(ty) or pa.types.is_map(ty):
            col = pa.array([None if v is None else json.dumps(v, default=str) for v in col.to_pylist()], pa.string())
        cols[name] = col
    out = pa.table(cols)
    rows = out.to_pylist() if ("label" in spec or "text_template" in spec) else []
    if "label" in spec:
        out = out.append_column("_label", pa.array(_template(rows, spec["label"], unique=True), pa.string()))
    if spec.get("text"):
        texts = _template(rows, spec["text_template"], False) if "text_template" in spec else None
        out = out.append_column("_text", pa.array(texts, pa.string()) if texts else pc.cast(out[spec["text"]], pa.string()))
    return out


CONFIG = {
    "font": "Helvetica Neue, Helvetica, Arial, Liberation Sans, DejaVu Sans, sans-serif",
    "view": {"stroke": None},
    "axis": {"labelFontSize": 11, "titleFontSize": 12, "titleFontWeight": "normal", "labelColor": "#333",
             "titleColor": "#333", "gridColor": "#ececec", "domainColor": "#aaa", "tickColor": "#aaa"},
    "legend": {"labelFontSize": 11, "titleFontSize": 11, "titleFontWeight": "normal", "symbolType": "square"},
    "bar": {"color": "#4c78a8"},
}


def chart_spec(t: pa.Table, spec: dict[str, Any], ctx: ChartContext) -> dict[str, Any]:
    """A Vega-Lite spec (dict) for one section's data. Raises Altair's MaxRowsError over 5,000 rows."""
    ch = CHARTS[spec["kind"]].build(chart_data(t, spec), spec, ctx)
    d = ch.configure(**CONFIG).to_dict()
    d.pop("$schema", None)  # a URL nothing needs to fetch
    return d


# ---------------------------------------------------------------------------- building a page


@dataclass
class Card:
    key: str
    title: str
    question: str
    command: str
    rows: int = 0
    spec: dict[str, Any] | None = None
    empty: str | None = None
    error: str | None = None
    wide: bool = False
    data: pa.Table | None = None  # the query result the chart draws


@dataclass
class Metric:
    label: str
    value: str
    detail: str = ""
    change: str = ""
    status: str = ""  # "worse", "better", "same" or ""


@dataclass
class Headline:
    title: str = ""
    metrics: list[Metric] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    good: list[str] = field(default_factory=list)
    note: str = ""


@dataclass
class Page:
    dashboard: str
    title: str
    description: str
    generated_at: dt.datetime
    warehouse: str
    scope: str
    filters: list[tuple[str, str]]
    headline: Headline
    cards: list[Card]
    build_s: float = 0.0


@dataclass
class Selection:
    since: dt.datetime | None
    until: dt.datetime | None
    tag: str | None
    by: str | None
    run_id: str | None
    run_name: str | None
    now: dt.datetime
    threshold: float


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
    given = {"run_id": sel.run_id, "since": None if sel.run_id else sel.since,
             "until": None if sel.run_id else sel.until, "tag": None if sel.run_id else sel.tag, "by": sel.by}
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
    end = ((sel.until or sel.now) - dt.timedelta(microseconds=1)).astimezone(dt.timezone.utc).date() + dt.timedelta(days=1)
    ms = [dt.datetime.combine(d, dt.time(), dt.timezone.utc).timestamp() * 1000 for d in (start, end)]
    return ms


def build_card(con: duckdb.DuckDBPyConnection, s: Section, sel: Selection, runs: int) -> Card:
    q = get_query(s.query)
    subs = {"by": sel.by or "", "run": sel.run_name or ""}
    params = _params(s.query, sel, s.params)
    card = Card(s.key, _sub(s.title or q.title, ChartContext(0, subs)), _sub(s.question or q.question, ChartContext(0, subs)),
                _command(s.query, params), wide=s.wide)
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
        card.error = (f"{s.query} returned {t.num_rows:,} rows, too many to chart (limit {MAX_ROWS:,}): "
                      "the section's query must aggregate more (top N, coarser buckets).")
    return card


def build(con: duckdb.DuckDBPyConnection, dashboard: str | None = None, *, since: str | dt.datetime | None = "4w",
          until: str | dt.datetime | None = None, tag: str | None = None, by: str | None = None,
          run: str | None = None, warehouse: str = "", threshold: float = 10.0,
          now: dt.datetime | None = None) -> Page:
    """Run every section's query and build its chart. ``run`` makes the one-run page."""
    t0 = time.perf_counter()
    now = now or dt.datetime.now(dt.timezone.utc)
    name = dashboard or ("run" if run else "weekly")
    d = get_dashboard(name)
    r = resolve_run(con, run) if run or d.headline == "run_overview" else None
    sel = Selection(_time(since, now), _time(until, now), tag, by, r.run_id if r else None, r.name if r else None,
                    now, threshold)
    scope_rows = run_named(con, "dash_selection", _params("dash_selection", sel, {})).to_pylist()[0]
    runs = scope_rows["runs"]
    headline = HEADLINES[d.headline](con, sel)
    cards = [build_card(con, s, sel, runs) for s in d.sections
             if s.when is None or (s.when == "by") == bool(by)]
    filters = [(k, v) for k, v in (
        ("since", _show_time(sel.since) if not r else None), ("until", _show_time(sel.until) if not r else None),
        ("tag", tag if not r else None), ("by", by), ("run", f"{r.name} ({r.run_id})" if r else None)) if v]
    subs = _Missing({"run": r.name if r else "", "by": by or ""})
    return Page(name, d.title.format_map(subs), d.description, now, warehouse, _scope(scope_rows, r is not None),
                filters, headline, cards, time.perf_counter() - t0)


def _time(v: str | dt.datetime | None, now: dt.datetime) -> dt.datetime | None:
    return v if isinstance(v, dt.datetime) or v is None else parse_since(v, now)


def _show_time(t: dt.datetime | None) -> str | None:
    if t is None:
        return None
    t = t.astimezone(dt.timezone.utc)
    return t.strftime("%Y-%m-%d") if (t.hour, t.minute, t.second) == (0, 0, 0) else t.strftime("%Y-%m-%d %H:%M UTC")


def _scope(s: dict[str, Any], one_run: bool) -> str:
    if not s["runs"]:
        return "no runs match"
    first, last = (_show_time(s[k]) for k in ("first_started", "last_started"))
    when = first if one_run else (f"{first[:10]} to {last[:10]}" if first and last else "")
    n = "1 run" if s["runs"] == 1 else f"{s['runs']:,} runs"
    bits = [n if not one_run else "", f"started {when}" if one_run else when,
            f"torch {s['torch_versions']}" if s["torch_versions"] else ""]
    return " · ".join(b for b in bits if b)


# ---------------------------------------------------------------------------- headlines


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
    """This week (7 days to --until or now) against the 7 days before; regressions flagged."""
    p = {"until": sel.until or sel.now, "tag": sel.tag}
    this, last = run_named(con, "dash_week_over_week", p).to_pylist()
    last_day = this["window_end"] - dt.timedelta(microseconds=1)
    h = Headline(title=f"This week ({this['window_start']:%a %b %d} to {last_day:%a %b %d}) against the 7 days before")
    h.metrics.append(Metric("Runs", _num(this["runs"]), f"{_num(last['runs'])} the week before"))
    pct = sel.threshold
    for key, label, seconds in (("compile_s", "Compile time", True), ("recompiles", "Recompiles", False),
                                ("graph_breaks", "Graph breaks", False), ("failures", "Failed compiles", False)):
        a, b = last[key] or 0, this[key] or 0
        m = Metric(label, _num(b, seconds))
        if this["runs"] and last["runs"]:
            pa_, pb = a / last["runs"], b / this["runs"]
            m.detail = f"{_num(pb, seconds)} per run (was {_num(pa_, seconds)})"
            ch = None if pa_ == 0 else 100.0 * (pb - pa_) / pa_  # as shown
            m.change = ("new" if pa_ == 0 and pb > 0 else "no change" if pb == pa_ else f"{ch:+.0f}% per run")
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
        h.note = "No runs in the last 7 days" + (f" (the week before: {last['runs']:,})." if last["runs"] else ".")
    new = this.get("new_break_sites") or 0
    if new:
        sites = run_named(con, "dash_new_break_sites", {**p, "limit": 5}).to_pylist()
        names = "; ".join(f"{s['gb_type']} at {_filter(s['location'], 'file')} ({s['occurrences']}×)" for s in sites)
        h.flags.append(f"{new} new graph-break site{'s' if new > 1 else ''} this week: {names}{' …' if new > 5 else ''}")
        h.metrics[3].detail += f" · {new} new site{'s' if new > 1 else ''}"
    return h


def run_overview(con: duckdb.DuckDBPyConnection, sel: Selection) -> Headline:
    o = run_named(con, "run_overview", {"run_id": sel.run_id}).to_pylist()[0]
    h = Headline(title=f"{o['run']} · {o['run_id']}")
    h.metrics = [
        Metric("Compile time", _num(o["compile_s"], True), f"+ {_num(o['bwd_compile_s'], True)} backward" if o["bwd_compiles"] else "forward frames"),
        Metric("Compiles", _num(o["compiles"]), f"{o['frames']:,} frames"),
        Metric("Recompiles", _num(o["recompiles"]), f"{o['limit_hits']} recompile-limit hits", status="worse" if o["limit_hits"] else ""),
        Metric("Graph breaks", _num(o["graph_breaks"]), f"{o['break_sites']} sites"),
        Metric("Kernels", _num(o["kernels"]), f"{o['cache_hits']} of {o['cache_lookups']} cache lookups hit"),
        Metric("Failed compiles", _num(o["failures"]), "", status="worse" if o["failures"] else ""),
        Metric("Wall time", _num(o["wall_s"], True), f"{o['ranks'] or 1} rank(s) · torch {o['torch'] or '?'}"),
    ]
    if o["limit_hits"]:
        h.flags.append(f"the recompile limit was hit {o['limit_hits']} time(s): those frames ran without compiling")
    if o["failures"]:
        h.flags.append(f"{o['failures']} compile(s) failed")
    if o["errors"]:
        h.flags.append(f"{o['errors']} ingest error(s): parts of the logs could not be read")
    return h


HEADLINES: dict[str, Callable[[duckdb.DuckDBPyConnection, Selection], Headline]] = {
    "week_over_week": week_over_week, "run_overview": run_overview, "none": lambda con, sel: Headline(),
}


# ---------------------------------------------------------------------------- offline JavaScript


def _vl_version() -> str | None:
    import vl_convert

    want = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    return want if want in vl_convert.get_vegalite_versions() else None


def vega_bundle() -> str:
    """vega + vega-lite + vega-embed as one script (from vl-convert), cached under
    ``$PT2LOGS_CACHE`` (default ``~/.cache/pt2logs``): building it takes a few seconds."""
    import vl_convert

    v = _vl_version()
    cache = Path(os.environ.get("PT2LOGS_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pt2logs")
    path = cache / f"vega-bundle-{vl_convert.__version__}-vl{v or 'default'}.js"
    try:
        text = path.read_text()
        if text.rstrip().endswith(";") and "window.vegaEmbed" in text[-2000:]:
            return text
    except OSError:
        pass
    text = vl_convert.javascript_bundle(vl_version=v) if v else vl_convert.javascript_bundle()
    try:
        cache.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
    except OSError:
        pass
    return text


def images(page: Page, fmt: str = "png", scale: float = 2.0) -> list[tuple[str, bytes]]:
    """Each chart of the page as an image (``png`` or ``svg``): [(file name, bytes)]."""
    import vl_convert

    v = _vl_version()
    out = []
    for c in page.cards:
        if c.spec is None:
            continue
        spec = json.loads(json.dumps(c.spec))
        spec["title"] = {"text": c.title, "anchor": "start", "fontSize": 14, "offset": 12}
        kw: dict[str, Any] = {"vl_version": v} if v else {}
        if fmt == "png":
            data = vl_convert.vegalite_to_png(spec, scale=scale, **kw)
        elif fmt == "svg":
            data = vl_convert.vegalite_to_svg(spec, **kw).encode()
        else:
            raise DashboardError(f"unknown image format {fmt!r}: png or svg")
        out.append((f"{page.dashboard}-{c.key}.{fmt}", data))
    return out


# ---------------------------------------------------------------------------- HTML


def _e(v: Any) -> str:
    return html.escape("" if v is None else str(v), quote=True)


def script_json(obj: Any) -> str:
    """JSON safe inside a <script> element: no ``</script>``, ``<!--`` or line separators."""
    s = json.dumps(obj, ensure_ascii=False, allow_nan=False, default=str)
    for a, b in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        s = s.replace(a, b)
    return s


EMBED_JS = """
const specs = JSON.parse(document.getElementById('pt2logs-specs').textContent);
const esc = (v) => String(v).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
  .replace(/"/g, '&quot;').replace(/'/g, '&#39;');
const state = window.__pt2logs = {done: false, rendered: [], errors: []};
const opts = {renderer: 'svg', actions: false, tooltip: {sanitize: esc, theme: 'light'}};
Promise.allSettled(Object.keys(specs).map((key) => {
  const el = document.getElementById('chart-' + key);
  const t0 = performance.now();
  return vegaEmbed(el, specs[key], opts).then(() => { state.rendered.push(key); (state.ms = state.ms || {})[key] = Math.round(performance.now() - t0); }).catch((err) => {
    state.errors.push(key + ': ' + err);
    el.textContent = 'This chart could not be drawn: ' + err;
    el.className = 'chart failed';
    console.error('pt2logs: chart ' + key + ' failed:', err);
  });
})).then(() => { state.done = true; document.body.dataset.rendered = String(state.rendered.length); });
"""

CSS = """
*{box-sizing:border-box}
body{margin:0;background:#f4f5f7;color:#1d2330;font:14px/1.45 "Helvetica Neue",Helvetica,Arial,"Liberation Sans","DejaVu Sans",sans-serif}
header{background:#1d2330;color:#fff;padding:22px 32px 18px}
header h1{margin:0 0 4px;font-size:24px;font-weight:600}
header .desc{margin:0 0 8px;color:#c9cfdb}
header .meta{margin:0;color:#9aa3b5;font-size:12.5px}
header .meta b{color:#dfe3ea;font-weight:500}
main{max-width:1140px;margin:0 auto;padding:20px 24px 40px}
.strip h2,.card h2{margin:0;font-size:16px;font-weight:600}
.strip{background:#fff;border-radius:8px;padding:16px 18px;margin-bottom:18px;box-shadow:0 1px 2px rgba(0,0,0,.06)}
.metrics{display:flex;flex-wrap:wrap;gap:10px;margin-top:12px}
.metric{flex:1 1 140px;border:1px solid #e3e6eb;border-left:4px solid #c5cad3;border-radius:6px;padding:8px 12px}
.metric.worse{border-left-color:#d62728;background:#fff6f6}
.metric.better{border-left-color:#2ca02c;background:#f5fbf5}
.metric .label{font-size:12px;color:#5b6475;text-transform:uppercase;letter-spacing:.04em}
.metric .value{font-size:22px;font-weight:600;margin:2px 0}
.metric .change{font-size:12.5px;font-weight:600}
.metric.worse .change{color:#b71c1c}.metric.better .change{color:#1b7a1b}
.metric .detail{font-size:12px;color:#5b6475}
.flags{margin:12px 0 0;padding:0;list-style:none}
.flags li{margin:4px 0;padding:6px 10px;border-radius:4px;font-size:13px;overflow-wrap:anywhere}
.flags li.bad{background:#fdecea;color:#8a1c1c}.flags li.good{background:#eaf6ea;color:#1f5f1f}
.flags li.info{background:#eef1f6;color:#3b4556}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(530px,1fr));gap:18px}
.card{background:#fff;border-radius:8px;padding:16px 18px 12px;box-shadow:0 1px 2px rgba(0,0,0,.06);min-width:0}
.card.wide{grid-column:1/-1}
.card .question{margin:3px 0 10px;color:#5b6475;font-size:13px}
.card .chart{overflow-x:auto;min-height:40px}
.card .empty{margin:8px 0;padding:14px;border:1px dashed #c9ced8;border-radius:6px;color:#5b6475;background:#fafbfc}
.card .error,.chart.failed{margin:8px 0;padding:14px;border-radius:6px;color:#8a1c1c;background:#fdecea}
.card .source{margin:8px 0 0;font-size:11.5px;color:#8a93a3;overflow-wrap:anywhere}
.card .source code{font-family:ui-monospace,Menlo,Consolas,"DejaVu Sans Mono",monospace;color:#5b6475}
footer{max-width:1140px;margin:0 auto;padding:0 24px 30px;color:#8a93a3;font-size:12px}
#vg-tooltip-element{max-width:520px;overflow-wrap:anywhere}
#vg-tooltip-element td.value{white-space:normal}
"""


def render_html(page: Page, bundle: str | None = None) -> str:
    """The page as one self-contained HTML document (no network needed to view it)."""
    bundle = vega_bundle() if bundle is None else bundle
    bundle = bundle.replace("</script", "<\\/script")  # cannot occur today; cheap insurance
    specs = {c.key: c.spec for c in page.cards if c.spec is not None}
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in (bundle, EMBED_JS))
    csp = (f"default-src 'none'; script-src {hashes} 'unsafe-eval'; style-src 'unsafe-inline'; "
           "img-src data:; font-src data:; base-uri 'none'; form-action 'none'")
    h = page.headline
    parts = [
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f'<meta http-equiv="Content-Security-Policy" content="{_e(csp)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(page.title)} · pt2logs</title><style>{CSS}</style></head>",
        f'<body data-dashboard="{_e(page.dashboard)}"><header><h1>{_e(page.title)}</h1>',
        f'<p class="desc">{_e(page.description)}</p>',
        '<p class="meta">' + " · ".join(m for m in (
            [f"<b>{_e(page.scope)}</b>"] + [f"{_e(k)} <b>{_e(v)}</b>" for k, v in page.filters]
            + [f"warehouse <b>{_e(page.warehouse)}</b>" if page.warehouse else "",
               f"generated {_e(page.generated_at.astimezone(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'))}"]) if m)
        + "</p></header><main>",
    ]
    if h.metrics or h.flags or h.note:
        parts.append(f'<section class="strip" id="headline"><h2>{_e(h.title)}</h2><div class="metrics">')
        for m in h.metrics:
            parts.append(f'<div class="metric {_e(m.status)}"><div class="label">{_e(m.label)}</div>'
                         f'<div class="value">{_e(m.value)}</div>'
                         + (f'<div class="change">{_e(m.change)}</div>' if m.change else "")
                         + f'<div class="detail">{_e(m.detail)}</div></div>')
        parts.append('</div><ul class="flags">')
        parts += [f'<li class="bad">⚠ Regression: {_e(f)}</li>' for f in h.flags]
        parts += [f'<li class="good">✓ Better: {_e(g)}</li>' for g in h.good]
        if h.note:
            parts.append(f'<li class="info">{_e(h.note)}</li>')
        elif not h.flags and page.dashboard != "run":
            parts.append('<li class="info">No regressions flagged (a metric per run up more than the threshold, '
                         'more failures, or new graph-break sites).</li>')
        parts.append("</ul></section>")
    parts.append('<div class="grid">')
    for c in page.cards:
        parts.append(f'<article class="card{" wide" if c.wide else ""}" id="section-{_e(c.key)}" data-section="{_e(c.key)}">'
                     f"<h2>{_e(c.title)}</h2><p class=\"question\">{_e(c.question)}</p>")
        if c.spec is not None:
            parts.append(f'<div class="chart" id="chart-{_e(c.key)}" role="img" aria-label="{_e(c.title)}"></div>')
        elif c.error:
            parts.append(f'<p class="error">This section could not be built: {_e(c.error)}</p>')
        else:
            parts.append(f'<p class="empty">{_e(c.empty)}</p>')
        parts.append(f'<p class="source">Numbers: <code>{_e(c.command)}</code></p></article>')
    parts.append("</div></main>")
    parts.append(f"<footer>pt2logs {_e(__version__)} · built in {page.build_s:.2f} s · charts: Vega-Lite (inlined, works offline)"
                 " · hover a mark for details</footer>")
    parts.append(f'<script type="application/json" id="pt2logs-specs">{script_json(specs)}</script>')
    parts.append(f'<script type="module">{bundle}</script>')
    parts.append(f'<script type="module">{EMBED_JS}</script>')
    parts.append("</body></html>\n")
    return "\n".join(parts)

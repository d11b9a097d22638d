"""Chart kinds: the registry a section's ``chart.kind`` names, and the five kinds.

Each kind is a function ``(data, spec, context) → Altair chart`` registered with
:func:`chart_kind` together with the spec fields it requires (``dashboards/README.md`` documents
them). The data arrives shaped by :mod:`.shaping` (``_label`` / ``_text`` columns made).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import altair as alt
import pyarrow as pa
import pyarrow.compute as pc


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


class KeepMissing(dict):
    """Values for ``str.format_map`` that leave an unknown ``{name}`` as written."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def fill(text: str | None, subs: dict[str, str]) -> str:
    """A registry title with ``{by}`` / ``{run}`` filled in (other braces stay)."""
    return (text or "").format_map(KeepMissing(subs))


def _sub(text: str | None, ctx: ChartContext) -> str:
    return fill(text, ctx.subs)


def _tooltips(spec: dict[str, Any], ctx: ChartContext) -> list[alt.Tooltip]:
    out = []
    for t in spec.get("tooltip", []):
        kind = t.get("type")
        if kind == "date":
            out.append(
                alt.Tooltip(
                    f"{t['field']}:T", title=_sub(t.get("title"), ctx), timeUnit="utcyearmonthdate"
                )
            )
        elif kind == "time":
            out.append(
                alt.Tooltip(
                    f"{t['field']}:T",
                    title=_sub(t.get("title"), ctx),
                    timeUnit="utcyearmonthdatehoursminutes",
                )
            )
        elif "format" in t:
            out.append(
                alt.Tooltip(f"{t['field']}:Q", title=_sub(t.get("title"), ctx), format=t["format"])
            )
        else:
            out.append(alt.Tooltip(t["field"], title=_sub(t.get("title"), ctx)))
    return out


def _color(spec: dict[str, Any], ctx: ChartContext, order: str | None = None) -> alt.Color:
    sort: Any = alt.EncodingSortField(field=order, op="min") if order else "ascending"
    return alt.Color(
        f"{spec['color']}:N",
        title=_sub(spec.get("color_title"), ctx) or None,
        sort=sort,
        legend=alt.Legend(orient="top", direction="horizontal", labelLimit=260, columns=4),
    )


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
    return alt.Scale(
        domain=[p["title"] for p in spec["stack"]], range=[p["color"] for p in spec["stack"]]
    )


@chart_kind("hbar", "label", "x")
def hbar(t: pa.Table, spec: dict[str, Any], ctx: ChartContext) -> alt.TopLevelMixin:
    """Horizontal bars, longest first: one per row, labelled by ``label`` (a template over the
    row); ``stack`` splits each bar into columns; ``text`` writes a figure at the bar's end."""
    x_title = _sub(spec.get("x_title"), ctx)
    y = alt.Y(
        "_label:N",
        title=None,
        sort=alt.EncodingSortField(field=spec["x"], op="max", order="descending"),
        axis=alt.Axis(labelLimit=LABELS),
    )
    base = alt.Chart(t)
    tips = _tooltips(spec, ctx)
    if spec.get("stack"):
        names = {s["field"]: s["title"] for s in spec["stack"]}
        bars = (
            base.transform_fold(list(names), as_=["_col", "_n"])
            .transform_calculate(
                _part=" + ".join(
                    f"(datum._col === {json.dumps(k)} ? {json.dumps(v)} : '')"
                    for k, v in names.items()
                )
            )
            .transform_calculate(_pos=f"indexof({json.dumps(list(names))}, datum._col)")
            .mark_bar()
            .encode(
                y=y,
                x=alt.X(
                    "_n:Q",
                    title=x_title,
                    stack="zero",
                    scale=_room(t, spec),
                    axis=_count_axis(t, spec),
                ),
                color=alt.Color(
                    "_part:N",
                    title=_sub(spec.get("stack_title"), ctx) or None,
                    sort=list(names.values()),
                    legend=alt.Legend(orient="top", direction="horizontal"),
                    scale=_stack_colors(spec),
                ),
                order=alt.Order("_pos:Q"),
                tooltip=tips
                + [
                    alt.Tooltip("_part:N", title=_sub(spec.get("stack_title"), ctx) or "Part"),
                    alt.Tooltip("_n:Q", title="Count"),
                ],
            )
        )
    else:
        enc = {
            "y": y,
            "x": alt.X(
                f"{spec['x']}:Q", title=x_title, scale=_room(t, spec), axis=_count_axis(t, spec)
            ),
            "tooltip": tips,
        }
        if spec.get("color"):
            enc["color"] = _color(spec, ctx)
        bars = base.mark_bar(color="#4c78a8").encode(**enc)
    layers = [bars]
    if spec.get("text"):
        layers.append(
            base.mark_text(align="left", baseline="middle", dx=4, fontSize=10, color="#555").encode(
                y=y, x=alt.X(f"{spec['x']}:Q"), text="_text:N", tooltip=tips
            )
        )
    return alt.layer(*layers).properties(width=_plot_width(t, "_label", ctx), height=alt.Step(22))


def _time_x(spec: dict[str, Any], ctx: ChartContext) -> alt.X:
    # domainMin/Max, not domain: with x2, an explicit domain is unioned with the data (a warning)
    scale = (
        alt.Scale(type="utc", domainMin=ctx.x_domain[0], domainMax=ctx.x_domain[1])
        if ctx.x_domain
        else alt.Scale(type="utc")
    )
    return alt.X(
        f"{spec['x']}:T",
        title=None,
        scale=scale,
        axis=alt.Axis(labelExpr="utcFormat(datum.value, '%b %d')", labelAngle=0, grid=False),
    )


@chart_kind("time_bars", "x", "x2", "y", "color")
def time_bars(t: pa.Table, spec: dict[str, Any], ctx: ChartContext) -> alt.TopLevelMixin:
    """Stacked bars over time: one bar per period (``x``..``x2``), stacked by ``color``."""
    order = spec.get("order")
    stack = alt.Chart(t).transform_stack(
        stack=spec["y"],
        groupby=[spec["x"]],
        as_=["_y0", "_y1"],
        sort=[alt.SortField(order or spec["color"], order="ascending")],
    )
    enc: dict[str, Any] = {
        "x": _time_x(spec, ctx),
        "x2": f"{spec['x2']}:T",
        "y": alt.Y("_y0:Q", title=_sub(spec.get("y_title"), ctx)),
        "y2": "_y1:Q",
        "color": _color(spec, ctx, order=order),
        "tooltip": _tooltips(spec, ctx),
    }
    bars = stack.mark_bar(stroke="white", strokeWidth=0.5, clip=True).encode(**enc)
    return bars.properties(width=ctx.width, height=240, autosize=_FIT)


@chart_kind("time_lines", "x", "y", "color")
def time_lines(t: pa.Table, spec: dict[str, Any], ctx: ChartContext) -> alt.TopLevelMixin:
    """One line per ``color`` value over time, with a point (and its tooltip) per period."""
    enc = {
        "x": _time_x(spec, ctx),
        "y": alt.Y(f"{spec['y']}:Q", title=_sub(spec.get("y_title"), ctx)),
        "color": _color(spec, ctx, order=spec.get("order")),
        "tooltip": _tooltips(spec, ctx),
    }
    base = alt.Chart(t).encode(**enc)
    return alt.layer(
        base.mark_line(clip=True), base.mark_point(filled=True, size=50, clip=True)
    ).properties(width=ctx.width, height=260, autosize=_FIT)


@chart_kind("gantt", "y", "x", "x2", "color", "sort")
def gantt(t: pa.Table, spec: dict[str, Any], ctx: ChartContext) -> alt.TopLevelMixin:
    """Bars from ``x`` to ``x2`` on rows ``y`` (ordered by ``sort``), coloured by ``color``."""
    y = alt.Y(
        f"{spec['y']}:N",
        title=None,
        sort=alt.EncodingSortField(field=spec["sort"], op="min"),
        axis=alt.Axis(labelLimit=LABELS),
    )
    bars = (
        alt.Chart(t)
        .mark_bar(height={"band": 0.7})
        .encode(
            y=y,
            x=alt.X(f"{spec['x']}:Q", title=_sub(spec.get("x_title"), ctx)),
            x2=f"{spec['x2']}:Q",
            color=_color(spec, ctx, order=spec.get("order")),
            tooltip=_tooltips(spec, ctx),
        )
    )
    return bars.properties(width=_plot_width(t, spec["y"], ctx), height=alt.Step(18))


@chart_kind("chain", "y", "x", "color")
def chain(t: pa.Table, spec: dict[str, Any], ctx: ChartContext) -> alt.TopLevelMixin:
    """A row per ``y`` (a frame): its steps along ``x`` joined by a line, coloured by ``color``."""
    tips = _tooltips(spec, ctx)
    y = alt.Y(f"{spec['y']}:N", title=None, sort=None, axis=alt.Axis(labelLimit=LABELS))
    x = alt.X(f"{spec['x']}:O", title=_sub(spec.get("x_title"), ctx), axis=alt.Axis(labelAngle=0))
    base = alt.Chart(t)
    layers = [
        base.mark_line(color="#bbb", strokeWidth=2).encode(
            y=y, x=x, detail=f"{spec['y']}:N", tooltip=tips
        ),
        base.mark_point(filled=True, size=160, opacity=1).encode(
            y=y, x=x, color=_color(spec, ctx), tooltip=tips
        ),
    ]
    if spec.get("text"):
        layers.append(
            base.mark_text(dy=-12, fontSize=9, color="#555").encode(
                y=y, x=x, text=f"{spec['text']}:N", tooltip=tips
            )
        )
    return alt.layer(*layers).properties(width=_plot_width(t, spec["y"], ctx), height=alt.Step(34))

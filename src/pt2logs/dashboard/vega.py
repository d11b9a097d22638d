"""The chart kinds' Vega-Lite specs written as plain dicts: the specs :mod:`.charts` builds with Altair, key for key.

Altair builds a chart as a tree of schema objects, checks each part against the Vega-Lite schema as it is made
and deep-copies the tree to write it out: ~15 CPU ms a chart, 115 of the weekly page's ~450 at 10,000 runs,
for specs whose shape only the five kinds decide. Here each kind writes its spec directly; Altair's builders
in :mod:`.charts` stay as the oracle (tests/test_dashboard.py: every card of the weekly, by-tag and run pages
equal to Altair's, dict for dict, and valid Vega-Lite).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pt2logs.dashboard.charts import LABELS, ChartContext, _plot_width, _sub

#: Altair's row limit (``alt.MaxRowsError`` beyond it, as Altair raises it)
MAX_ROWS = 5000
#: what Altair's default theme adds to a chart's config
VIEW = {"continuousWidth": 300, "continuousHeight": 300}


def _type(t: pa.Table, field: str) -> str:
    """The encoding type Altair infers for a column named without one."""
    ty = t.schema.field(field).type
    if pa.types.is_integer(ty) or pa.types.is_floating(ty) or pa.types.is_decimal(ty):
        return "quantitative"
    if pa.types.is_temporal(ty):
        return "temporal"
    return "nominal"


def _tooltips(t: pa.Table, spec: dict[str, Any], ctx: ChartContext) -> list[dict[str, Any]]:
    out = []
    for x in spec.get("tooltip", []):
        title = _sub(x.get("title"), ctx)
        kind = x.get("type")
        if kind in ("date", "time"):
            unit = "utcyearmonthdate" if kind == "date" else "utcyearmonthdatehoursminutes"
            out.append({"field": x["field"], "timeUnit": unit, "title": title, "type": "temporal"})
        elif "format" in x:
            out.append(
                {"field": x["field"], "format": x["format"], "title": title, "type": "quantitative"}
            )
        else:
            out.append({"field": x["field"], "title": title, "type": _type(t, x["field"])})
    return out


def _color(spec: dict[str, Any], ctx: ChartContext, order: str | None = None) -> dict[str, Any]:
    return {
        "field": spec["color"],
        "legend": {"columns": 4, "direction": "horizontal", "labelLimit": 260, "orient": "top"},
        "sort": {"field": order, "op": "min"} if order else "ascending",
        "title": _sub(spec.get("color_title"), ctx) or None,
        "type": "nominal",
    }


def _put(d: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """``d`` with ``key`` set, unless ``value`` is None (Altair's Undefined: left out)."""
    if value is not None:
        d[key] = value
    return d


def _room(t: pa.Table, spec: dict[str, Any]) -> dict[str, Any] | None:
    if not spec.get("text") or t.num_rows == 0:
        return None
    top = pc.max(t[spec["x"]]).as_py() or 0
    return {"domainMax": float(top) * 1.3, "nice": False} if top > 0 else None


def _count_axis(t: pa.Table, spec: dict[str, Any]) -> dict[str, Any] | None:
    if not pa.types.is_integer(t.schema.field(spec["x"]).type) or t.num_rows == 0:
        return None
    top = pc.max(t[spec["x"]]).as_py() or 1
    return {"format": "d", "tickCount": int(min(top, 8)), "tickMinStep": 1}


def hbar(t: pa.Table, spec: dict[str, Any], ctx: ChartContext) -> dict[str, Any]:
    x_title = _sub(spec.get("x_title"), ctx)
    y = {
        "axis": {"labelLimit": LABELS},
        "field": "_label",
        "sort": {"field": spec["x"], "op": "max", "order": "descending"},
        "title": None,
        "type": "nominal",
    }
    tips = _tooltips(t, spec, ctx)
    if spec.get("stack"):
        names = {s["field"]: s["title"] for s in spec["stack"]}
        color: dict[str, Any] = {
            "field": "_part",
            "legend": {"direction": "horizontal", "orient": "top"},
        }
        if all("color" in p for p in spec["stack"]):
            color["scale"] = {
                "domain": [p["title"] for p in spec["stack"]],
                "range": [p["color"] for p in spec["stack"]],
            }
        color |= {
            "sort": list(names.values()),
            "title": _sub(spec.get("stack_title"), ctx) or None,
            "type": "nominal",
        }
        x = _put({}, "axis", _count_axis(t, spec)) | {"field": "_n"}
        x = _put(x, "scale", _room(t, spec)) | {
            "stack": "zero",
            "title": x_title,
            "type": "quantitative",
        }
        part = " + ".join(
            f"(datum._col === {json.dumps(k)} ? {json.dumps(v)} : '')" for k, v in names.items()
        )
        bars = {
            "mark": {"type": "bar"},
            "encoding": {
                "color": color,
                "order": {"field": "_pos", "type": "quantitative"},
                "tooltip": tips
                + [
                    {
                        "field": "_part",
                        "title": _sub(spec.get("stack_title"), ctx) or "Part",
                        "type": "nominal",
                    },
                    {"field": "_n", "title": "Count", "type": "quantitative"},
                ],
                "x": x,
                "y": y,
            },
            "transform": [
                {"fold": list(names), "as": ["_col", "_n"]},
                {"calculate": part, "as": "_part"},
                {"calculate": f"indexof({json.dumps(list(names))}, datum._col)", "as": "_pos"},
            ],
        }
    else:
        enc: dict[str, Any] = {}
        if spec.get("color"):
            enc["color"] = _color(spec, ctx)
        x = _put({}, "axis", _count_axis(t, spec)) | {"field": spec["x"]}
        x = _put(x, "scale", _room(t, spec)) | {"title": x_title, "type": "quantitative"}
        enc |= {"tooltip": tips, "x": x, "y": y}
        bars = {"mark": {"type": "bar", "color": "#4c78a8"}, "encoding": enc}
    layers = [bars]
    if spec.get("text"):
        text = {"type": "text", "align": "left", "baseline": "middle", "color": "#555", "dx": 4}
        layers.append(
            {
                "mark": text | {"fontSize": 10},
                "encoding": {
                    "text": {"field": "_text", "type": "nominal"},
                    "tooltip": tips,
                    "x": {"field": spec["x"], "type": "quantitative"},
                    "y": y,
                },
            }
        )
    return {
        "layer": layers,
        "@data": None,
        "height": {"step": 22},
        "width": _plot_width(t, "_label", ctx),
    }


def _time_x(spec: dict[str, Any], ctx: ChartContext) -> dict[str, Any]:
    scale: dict[str, Any] = (
        {"domainMax": ctx.x_domain[1], "domainMin": ctx.x_domain[0], "type": "utc"}
        if ctx.x_domain
        else {"type": "utc"}
    )
    return {
        "axis": {"grid": False, "labelAngle": 0, "labelExpr": "utcFormat(datum.value, '%b %d')"},
        "field": spec["x"],
        "scale": scale,
        "title": None,
        "type": "temporal",
    }


def time_bars(t: pa.Table, spec: dict[str, Any], ctx: ChartContext) -> dict[str, Any]:
    order = spec.get("order")
    return {
        "@data": None,
        "mark": {"type": "bar", "clip": True, "stroke": "white", "strokeWidth": 0.5},
        "autosize": {"contains": "padding", "type": "fit-x"},
        "encoding": {
            "color": _color(spec, ctx, order=order),
            "tooltip": _tooltips(t, spec, ctx),
            "x": _time_x(spec, ctx),
            "x2": {"field": spec["x2"]},
            "y": {"field": "_y0", "title": _sub(spec.get("y_title"), ctx), "type": "quantitative"},
            "y2": {"field": "_y1"},
        },
        "height": 240,
        "transform": [
            {
                "groupby": [spec["x"]],
                "stack": spec["y"],
                "sort": [{"field": order or spec["color"], "order": "ascending"}],
                "as": ["_y0", "_y1"],
            }
        ],
        "width": ctx.width,
    }


def time_lines(t: pa.Table, spec: dict[str, Any], ctx: ChartContext) -> dict[str, Any]:
    enc = {
        "color": _color(spec, ctx, order=spec.get("order")),
        "tooltip": _tooltips(t, spec, ctx),
        "x": _time_x(spec, ctx),
        "y": {"field": spec["y"], "title": _sub(spec.get("y_title"), ctx), "type": "quantitative"},
    }
    return {
        "layer": [
            {"mark": {"type": "line", "clip": True}, "encoding": enc},
            {"mark": {"type": "point", "clip": True, "filled": True, "size": 50}, "encoding": enc},
        ],
        "autosize": {"contains": "padding", "type": "fit-x"},
        "@data": None,
        "height": 260,
        "width": ctx.width,
    }


def gantt(t: pa.Table, spec: dict[str, Any], ctx: ChartContext) -> dict[str, Any]:
    return {
        "@data": None,
        "mark": {"type": "bar", "height": {"band": 0.7}},
        "encoding": {
            "color": _color(spec, ctx, order=spec.get("order")),
            "tooltip": _tooltips(t, spec, ctx),
            "x": {
                "field": spec["x"],
                "title": _sub(spec.get("x_title"), ctx),
                "type": "quantitative",
            },
            "x2": {"field": spec["x2"]},
            "y": {
                "axis": {"labelLimit": LABELS},
                "field": spec["y"],
                "sort": {"field": spec["sort"], "op": "min"},
                "title": None,
                "type": "nominal",
            },
        },
        "height": {"step": 18},
        "width": _plot_width(t, spec["y"], ctx),
    }


def chain(t: pa.Table, spec: dict[str, Any], ctx: ChartContext) -> dict[str, Any]:
    tips = _tooltips(t, spec, ctx)
    y = {
        "axis": {"labelLimit": LABELS},
        "field": spec["y"],
        "sort": None,
        "title": None,
        "type": "nominal",
    }
    x = {
        "axis": {"labelAngle": 0},
        "field": spec["x"],
        "title": _sub(spec.get("x_title"), ctx),
        "type": "ordinal",
    }
    layers = [
        {
            "mark": {"type": "line", "color": "#bbb", "strokeWidth": 2},
            "encoding": {
                "detail": {"field": spec["y"], "type": "nominal"},
                "tooltip": tips,
                "x": x,
                "y": y,
            },
        },
        {
            "mark": {"type": "point", "filled": True, "opacity": 1, "size": 160},
            "encoding": {"color": _color(spec, ctx), "tooltip": tips, "x": x, "y": y},
        },
    ]
    if spec.get("text"):
        layers.append(
            {
                "mark": {"type": "text", "color": "#555", "dy": -12, "fontSize": 9},
                "encoding": {
                    "text": {"field": spec["text"], "type": "nominal"},
                    "tooltip": tips,
                    "x": x,
                    "y": y,
                },
            }
        )
    return {
        "layer": layers,
        "@data": None,
        "height": {"step": 34},
        "width": _plot_width(t, spec["y"], ctx),
    }


KINDS: dict[str, Callable[[pa.Table, dict[str, Any], ChartContext], dict[str, Any]]] = {
    "hbar": hbar,
    "time_bars": time_bars,
    "time_lines": time_lines,
    "gantt": gantt,
    "chain": chain,
}


def spec(
    t: pa.Table, section: dict[str, Any], ctx: ChartContext, config: dict[str, Any]
) -> dict[str, Any]:
    """The whole spec of a chart of kind ``section["kind"]`` over ``t`` (shaped by :mod:`.shaping`): its
    config, its data as Altair names and writes it (``data-`` + a hash of the rows, in ``datasets``)."""
    if t.num_rows > MAX_ROWS:
        import altair as alt

        raise alt.MaxRowsError(
            f"The number of rows in your dataset ({t.num_rows}) is greater than the maximum allowed ({MAX_ROWS})."
        )
    body = KINDS[section["kind"]](t, section, ctx)
    values = t.to_pylist()
    name = (
        "empty"
        if values == [{}]
        else "data-"
        + hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:32]
    )
    cfg = {"view": VIEW | config.get("view", {})} | {
        k: config[k] for k in sorted(config) if k != "view"
    }
    out: dict[str, Any] = {"config": cfg}
    for k, v in body.items():
        out |= {"data": {"name": name}} if k == "@data" else {k: v}
    out["datasets"] = {name: values}
    return out

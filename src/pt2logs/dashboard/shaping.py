"""Query results shaped for a chart: types Vega reads, row labels from templates, the spec.

A template is text with ``{column}`` or ``{column|filter}`` fields (filters: ``file`` keeps a
path's last part, ``rank`` writes `` (rank N)`` or nothing).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pt2logs.dashboard import vega
from pt2logs.dashboard.charts import CHARTS, ChartContext

_FIELD = re.compile(r"\{(\w+)(?:\|(\w+))?\}")


def template_filter(value: Any, how: str | None) -> str:
    """A template field's value as text, through its filter (``file``, ``rank`` or none)."""
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
        s = _FIELD.sub(lambda m, r=r: template_filter(r.get(m.group(1)), m.group(2)), template)
        s = s if len(s) <= 90 else s[:89] + "…"
        if unique:
            seen[s] = seen.get(s, 0) + 1
            s = s if seen[s] == 1 else f"{s} ({seen[s]})"
        out.append(s)
    return out


def chart_data(t: pa.Table, spec: dict[str, Any]) -> pa.Table:
    """The query result as Vega wants it: decimals as floats, inf and NaN as null, dates as ``YYYY-MM-DD`` (read as
    UTC by browsers), times as ISO UTC; plus ``_label`` / ``_text`` when the spec asks."""
    cols = {}
    for name, col in zip(t.column_names, t.columns, strict=True):
        ty = col.type
        if pa.types.is_decimal(ty):
            col = pc.cast(col, pa.float64())
        if pa.types.is_floating(
            col.type
        ):  # inf and NaN: null (no JSON for them; Vega leaves nulls out)
            col = pc.if_else(pc.is_finite(col), col, pa.scalar(None, col.type))
        elif pa.types.is_date(ty):
            col = pc.strftime(pc.cast(col, pa.timestamp("s")), format="%Y-%m-%d")
        elif pa.types.is_timestamp(ty):
            # whole seconds are enough for a chart; a plain cast to ms would refuse µs values
            col = pc.strftime(
                pc.cast(col, pa.timestamp(ty.unit, tz="UTC")) if ty.tz else col,
                format="%Y-%m-%dT%H:%M:%SZ",
            )
        elif pa.types.is_list(ty) or pa.types.is_struct(ty) or pa.types.is_map(ty):
            col = pa.array(
                [None if v is None else json.dumps(v, default=str) for v in col.to_pylist()],
                pa.string(),
            )
        cols[name] = col
    out = pa.table(cols)
    rows = out.to_pylist() if ("label" in spec or "text_template" in spec) else []
    if "label" in spec:
        out = out.append_column(
            "_label", pa.array(_template(rows, spec["label"], unique=True), pa.string())
        )
    if spec.get("text"):
        texts = _template(rows, spec["text_template"], False) if "text_template" in spec else None
        out = out.append_column(
            "_text",
            pa.array(texts, pa.string()) if texts else pc.cast(out[spec["text"]], pa.string()),
        )
    return out


CONFIG = {
    "font": "Helvetica Neue, Helvetica, Arial, Liberation Sans, DejaVu Sans, sans-serif",
    "view": {"stroke": None},
    "axis": {
        "labelFontSize": 11,
        "titleFontSize": 12,
        "titleFontWeight": "normal",
        "labelColor": "#333",
        "titleColor": "#333",
        "gridColor": "#ececec",
        "domainColor": "#aaa",
        "tickColor": "#aaa",
    },
    "legend": {
        "labelFontSize": 11,
        "titleFontSize": 11,
        "titleFontWeight": "normal",
        "symbolType": "square",
    },
    "bar": {"color": "#4c78a8"},
}


def chart_spec(t: pa.Table, spec: dict[str, Any], ctx: ChartContext) -> dict[str, Any]:
    """A Vega-Lite spec (dict) for one section's data, written by :mod:`.vega` (the spec :func:`altair_spec`
    makes, key for key, without Altair's cost). Raises Altair's MaxRowsError over 5,000 rows."""
    return vega.spec(chart_data(t, spec), spec, ctx, CONFIG)


def altair_spec(t: pa.Table, spec: dict[str, Any], ctx: ChartContext) -> dict[str, Any]:
    """The same spec built with Altair (the chart kinds of :mod:`.charts`): the oracle :mod:`.vega` is
    checked against (tests/test_dashboard.py). Not validated against the schema here: the tests validate."""
    ch = CHARTS[spec["kind"]].build(chart_data(t, spec), spec, ctx)
    d = ch.configure(**CONFIG).to_dict(validate=False)
    d.pop("$schema", None)  # a URL nothing needs to fetch
    return d

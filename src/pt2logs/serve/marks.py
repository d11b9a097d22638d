"""Every mark of the overview's charts links to what it counts: an ``href`` in each row of a chart's data and
an ``href`` encoding on each of its marks (Vega opens it on a click).

A row that names a site (``break_key``, ``failure_key``) links to the site's page; a compile, to the compile;
a trend's bar or point (a period, maybe a tag value as its series), to the runs started in that period
(``/runs?since=&until=&tag=``); a run-outcome bar (a tag value), to those runs; any other row, to the
card's query with the page's selection (its rows are what the mark adds up).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from pt2logs.serve.render import compile_url, site_url

#: the cards whose marks count runs by period (and series), and how /runs sorts them
TREND_SORT = {"recompiles": "recompiles", "compile_time": "compile_s"}


def _runs_url(params: Mapping[str, Any]) -> str:
    p = {k: str(v) for k, v in params.items() if v not in (None, "")}
    return "/runs" + (f"?{urlencode(p)}" if p else "")


def _series_tag(row: Mapping[str, Any], sel: Mapping[str, Any]) -> dict[str, Any]:
    """The /runs filter a row's series stands for (``by=model``: the series is a model, or ``(no model
    tag)``: the runs without one), with the page's tag."""
    by, series = sel.get("by"), row.get("series")
    if not by or not isinstance(series, str):
        return {"tag": sel.get("tag")}
    if series.startswith("(no ") and series.endswith(")"):
        return {"tag": sel.get("tag"), "untagged": by}
    return {"tag": f"{by}={series}"}


def href(key: str, row: Mapping[str, Any], sel: Mapping[str, Any], card_link: str) -> str:
    """Where a mark of card ``key`` drawing ``row`` leads, on a page selected by ``sel``."""
    for site in ("break_key", "failure_key"):
        if row.get(site):
            return site_url(row[site])
    if row.get("compile_id") and row.get("run_id"):
        return compile_url(row["run_id"], row["compile_id"], row.get("rank"))
    if row.get("period"):
        return _runs_url(
            {
                "since": row["period"],
                "until": row.get("period_end"),
                **_series_tag(row, sel),
                "sort": TREND_SORT.get(key.split("_by_")[0], "started_at"),
            }
        )
    if key.startswith("run_outcomes") and "series" in row:
        return _runs_url(
            {"since": sel.get("since"), "until": sel.get("until"), **_series_tag(row, sel)}
        )
    return card_link


def link_marks(key: str, spec: dict[str, Any], sel: Mapping[str, Any], card_link: str) -> None:
    """Give every row of ``spec``'s data its ``href`` and every mark an ``href`` encoding (in place)."""
    for rows in (spec.get("datasets") or {}).values():
        for row in rows:
            if isinstance(row, dict):
                row["href"] = href(key, row, sel, card_link)
    values = (spec.get("data") or {}).get("values")
    for row in values or ():
        if isinstance(row, dict):
            row["href"] = href(key, row, sel, card_link)
    for layer in spec.get("layer") or [spec]:
        if "mark" in layer:
            layer.setdefault("encoding", {})["href"] = {"field": "href", "type": "nominal"}

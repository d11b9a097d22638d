"""Dashboards: named queries drawn as Altair charts, in one self-contained HTML file.

A dashboard is a registry entry, ``dashboards/<name>.toml``: a title, a headline strip and a list
of sections, each one named query (``queries/*.sql``) plus a chart spec (a chart *kind* from
:data:`CHARTS` and the fields it draws). Adding a chart is one ``[[sections]]`` entry; see
``dashboards/README.md``. The numbers are exactly those of ``pt2logs query NAME`` with the same
filters (every card says which command gives them).

Aggregation happens in DuckDB: every query a section uses returns at most a few hundred rows
(top N, per-day buckets), whatever the warehouse size. Altair's 5,000-row limit stays on.

The package, one job a module (each imports only the ones above it)::

    model.py         the data a page is made of: Page, Card, Headline, Metric, Selection, DashboardError
    charts.py        the chart kinds registry (CHARTS, @chart_kind) and hbar, time_bars, time_lines, gantt, chain
    shaping.py       query results as Vega wants them, label templates and their filters, chart_spec
    headlines.py     the headline strips (week_over_week, run_overview); regressions by report.regressed
    registry.py      dashboards/*.toml: Section, Dashboard, parse / load / get
    page.py          build(): run every section's query with one selection, build_card()
    bundle.py        vega + vega-lite + vega-embed from vl-convert, in memory (the core writes no cache)
    html.py          render_html(): markup, CSS, the embedding script, escaping, CSP
    chart_images.py  images(): each chart as PNG or SVG

The core returns data (:class:`Page`, HTML text, image bytes); :mod:`pt2logs.cli.dashboard` writes
files, and decides where the Vega bundle is cached between runs.
"""

from pt2logs.dashboard.bundle import bundle_name, is_bundle, vega_bundle, vl_version
from pt2logs.dashboard.chart_images import images
from pt2logs.dashboard.charts import (
    CHARTS,
    ChartContext,
    ChartKind,
    chain,
    chart_kind,
    gantt,
    hbar,
    time_bars,
    time_lines,
)
from pt2logs.dashboard.headlines import HEADLINES, run_overview, week_over_week
from pt2logs.dashboard.html import CSS, EMBED_JS, render_html, script_json
from pt2logs.dashboard.model import Card, DashboardError, Headline, Metric, Page, Selection
from pt2logs.dashboard.page import MAX_ROWS, WIDE, WIDTH, build, build_card
from pt2logs.dashboard.registry import (
    Dashboard,
    Section,
    dashboard_dirs,
    get_dashboard,
    load_dashboards,
    parse_dashboard,
)
from pt2logs.dashboard.shaping import CONFIG, chart_data, chart_spec

__all__ = [
    "CHARTS",
    "CONFIG",
    "CSS",
    "EMBED_JS",
    "HEADLINES",
    "MAX_ROWS",
    "WIDE",
    "WIDTH",
    "Card",
    "ChartContext",
    "ChartKind",
    "Dashboard",
    "DashboardError",
    "Headline",
    "Metric",
    "Page",
    "Section",
    "Selection",
    "build",
    "build_card",
    "bundle_name",
    "chain",
    "chart_data",
    "chart_kind",
    "chart_spec",
    "dashboard_dirs",
    "gantt",
    "get_dashboard",
    "hbar",
    "images",
    "is_bundle",
    "load_dashboards",
    "parse_dashboard",
    "render_html",
    "run_overview",
    "script_json",
    "time_bars",
    "time_lines",
    "vega_bundle",
    "vl_version",
    "week_over_week",
]

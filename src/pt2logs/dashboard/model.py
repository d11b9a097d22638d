"""What a dashboard page is made of: plain data, built by :mod:`.page` and :mod:`.headlines`,
written out by :mod:`.html` and :mod:`.chart_images`."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa


class DashboardError(Exception):
    """A user-facing problem: unknown dashboard, a registry entry that does not make sense."""


@dataclass
class Card:
    """One section of a page: its chart spec, or why there is none."""

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
class Banner:
    """A sentence above everything else on a page: how the run ended (dashboard/banner.py)."""

    level: str  # "bad", "good" or "info"
    title: str
    lines: list[str] = field(default_factory=list)


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
    banner: Banner | None = None


@dataclass
class Selection:
    """Which runs a page covers (resolved once, so every section counts the same runs)."""

    since: dt.datetime | None
    until: dt.datetime | None
    tag: str | None
    by: str | None
    run_id: str | None
    run_name: str | None
    now: dt.datetime
    threshold: float

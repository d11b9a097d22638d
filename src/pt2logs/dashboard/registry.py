"""The dashboard registry: ``dashboards/<name>.toml``, read and checked.

A dashboard is a title, a headline strip and a list of sections, each a named query plus a chart
spec (a kind from :data:`~pt2logs.dashboard.charts.CHARTS`); see ``dashboards/README.md``.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pt2logs.dashboard.charts import CHARTS
from pt2logs.dashboard.headlines import HEADLINES
from pt2logs.dashboard.model import DashboardError
from pt2logs.query.sql_files import data_dirs
from pt2logs.tables import TABLES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_KEY = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Section:
    key: str
    query: str
    chart: dict[str, Any]
    title: str = ""
    question: str = ""
    empty: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    when: str | None = (
        None  # "by" / "no_by": only with / without --by; "rows": only when its query returns rows
    )
    wide: bool = False
    #: with ``when = "rows"``: tables its query needs a row of (it returns none while they are all empty)
    needs: tuple[str, ...] = ()


@dataclass
class Dashboard:
    name: str
    title: str
    description: str
    headline: str
    sections: list[Section]
    path: Path


def dashboard_dirs() -> list[Path]:
    """The repo's dashboards/ (development) or the installed copy (the wheel puts it in
    ``pt2logs/_data/``, see pyproject's force-include)."""
    return data_dirs("dashboards")


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
            raise DashboardError(
                f"{where}: key {s['key']!r} must be lowercase letters, digits and _"
            )
        if s["chart"].get("kind") not in CHARTS:
            raise DashboardError(
                f"{where}: chart kind {s['chart'].get('kind')!r} is not one of {', '.join(CHARTS)}"
            )
        missing = [k for k in CHARTS[s["chart"]["kind"]].required if k not in s["chart"]]
        if missing:
            raise DashboardError(
                f"{where}: a {s['chart']['kind']} chart needs {', '.join(missing)}"
            )
        if s.get("when") not in (None, "by", "no_by", "rows"):
            raise DashboardError(f"{where}: when must be 'by', 'no_by' or 'rows'")
        needs = s.get("needs", [])
        if needs and (s.get("when") != "rows" or not set(needs) <= set(TABLES)):
            raise DashboardError(f"{where}: needs names tables of a when = 'rows' section")
        secs.append(Section(**{**s, "needs": tuple(needs)}))
    keys = [(s.key, s.when) for s in secs]
    if len(set(keys)) != len(keys):
        raise DashboardError(f"{path.name}: section keys repeat")
    if d.get("headline", "none") not in HEADLINES:
        raise DashboardError(
            f"{path.name}: headline {d.get('headline')!r} is not one of {', '.join(HEADLINES)}"
        )
    return Dashboard(
        path.stem,
        d.get("title", path.stem),
        d.get("description", ""),
        d.get("headline", "none"),
        secs,
        path,
    )


#: each dashboard file read, by (path, mtime, size): a page asks for its dashboard at every build (``pt2logs
#: serve``: every request), and reading and checking the TOML files took ~17 ms of each weekly page
_READ: dict[tuple[str, int, int], Dashboard] = {}


def _read(p: Path) -> Dashboard:
    st = p.stat()
    k = (str(p), st.st_mtime_ns, st.st_size)
    if k not in _READ:
        _READ[k] = parse_dashboard(p)
    return _READ[k]


def load_dashboards() -> dict[str, Dashboard]:
    """Every dashboard by name; a file is read again only when it changed."""
    out: dict[str, Dashboard] = {}
    for d in dashboard_dirs():
        for p in sorted(d.glob("*.toml")):
            out.setdefault(p.stem, _read(p))
    return out


def get_dashboard(name: str) -> Dashboard:
    ds = load_dashboards()
    if name not in ds:
        raise DashboardError(
            f"no dashboard {name!r}; there are: {', '.join(ds) or 'none'} (dashboards/*.toml)"
        )
    return ds[name]

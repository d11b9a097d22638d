"""The report pages: ``reports/<name>.toml`` (``summary``, ``ranks``), read and checked.

A page is a list of sections, each a named query and how to show it: its title, the columns the
terminal table shows, when it is shown and what the terminal says when it has no rows (see
``reports/README.md``). :mod:`pt2logs.reports.compose` runs a page's queries for one run;
:mod:`pt2logs.cli.render` draws the result. Dashboards are the same idea with charts
(:mod:`pt2logs.dashboard.registry`).
"""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pt2logs.query.queries import QueryError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_KEY = re.compile(r"^[a-z][a-z0-9_]*$")
#: the installed package (src/pt2logs in a checkout): data lives beside it
_PACKAGE = Path(__file__).resolve().parents[1]
#: when a section is shown: always (None), only when its query returns rows, only for runs of 2+ ranks
WHEN = (None, "rows", "ranks")


class PageError(QueryError):
    """A page file that cannot be read or breaks a rule of reports/README.md."""


@dataclass(frozen=True)
class Section:
    key: str  # unique in the page: the section's key in --format json
    query: str  # a named query (queries/<query>.sql), run with run_id and params
    title: str = ""  # the terminal table's title
    params: dict[str, Any] = field(default_factory=dict)  # fixed parameters besides run_id
    columns: tuple[
        str, ...
    ] = ()  # the terminal table's columns (--wide, other formats: every column)
    empty: str = ""  # what the terminal says when there are no rows; {run} and {run_id} filled in
    when: str | None = None  # WHEN
    hint: str = ""  # a line under the terminal table; {run} and {run_id} filled in
    added_up: bool = (
        True  # without a rank column, the title says a multi-rank run's ranks are added up
    )
    outcomes: bool = False  # each rank's outcome and why (rank_outcomes) joined on rank


@dataclass(frozen=True)
class Page:
    name: str
    sections: tuple[Section, ...]
    path: Path

    def __getitem__(self, key: str) -> Section:
        return next(s for s in self.sections if s.key == key)


def page_dirs() -> list[Path]:
    """The repo's reports/ (development) or the installed copy (the wheel puts it in
    ``pt2logs/_data/``, see pyproject's force-include)."""
    dirs = [_PACKAGE.parents[1] / "reports", _PACKAGE / "_data" / "reports"]
    return [d for d in dirs if d.is_dir()]


def parse_section(s: dict[str, Any], where: str) -> Section:
    unknown = set(s) - set(Section.__dataclass_fields__)
    if unknown:
        raise PageError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    for k in ("key", "query"):
        if k not in s:
            raise PageError(f"{where}: needs a {k!r}")
    if not _KEY.match(s["key"]):
        raise PageError(f"{where}: key {s['key']!r} must be lowercase letters, digits and _")
    if s.get("when") not in WHEN:
        raise PageError(f"{where}: when must be 'rows' or 'ranks'")
    # every key given is used: a section shown only with rows never shows its empty note
    if s.get("when") == "rows" and "empty" in s:
        raise PageError(
            f"{where}: a section shown only when it has rows (when = 'rows') takes no empty note"
        )
    if s.get("when") != "rows" and not s.get("empty"):
        raise PageError(
            f"{where}: needs an empty note (what the terminal says when it has no rows)"
        )
    for k in ("empty", "hint"):
        try:
            s.get(k, "").format(run="", run_id="")
        except (KeyError, IndexError, ValueError):
            raise PageError(f"{where}: {k} fills only {{run}} and {{run_id}}: {s[k]!r}") from None
    return Section(**{**s, "columns": tuple(s.get("columns", ()))})


def parse_page(path: Path) -> Page:
    try:
        d = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise PageError(f"{path}: {e}") from None
    if set(d) - {"sections"}:  # a page is its sections (what comes first is the command's)
        raise PageError(f"{path.name}: unknown key(s) {', '.join(sorted(set(d) - {'sections'}))}")
    secs = tuple(
        parse_section(s, f"{path.name} section {i + 1}")
        for i, s in enumerate(d.get("sections", []))
    )
    keys = [s.key for s in secs]
    if len(set(keys)) != len(keys):
        raise PageError(f"{path.name}: section keys repeat")
    return Page(path.stem, secs, path)


@functools.cache
def load_pages() -> dict[str, Page]:
    """Every page file, read once per process (the first directory that has a name wins)."""
    out: dict[str, Page] = {}
    for d in page_dirs():
        for p in sorted(d.glob("*.toml")):
            out.setdefault(p.stem, parse_page(p))
    return out


def get_page(name: str) -> Page:
    pages = load_pages()
    if name not in pages:
        raise PageError(
            f"no report page {name!r}; there are: {', '.join(pages) or 'none'} (reports/*.toml)"
        )
    return pages[name]

"""The SQL files of the query side: where they live and the header they start with.

Named queries (``queries/*.sql``, :mod:`pt2logs.query.queries`) and macros (``queries/macros/*.sql``,
:mod:`pt2logs.query.macros`) start with ``-- key: value`` comment lines; this module reads them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_HEADER = re.compile(r"^--\s*(\w+)\s*:\s*(.*)$")
_PARAM = re.compile(r"(\w+)\s*(?:\(((?:[^()]|\([^()]*\))*)\))?")


@dataclass(frozen=True)
class Param:
    name: str
    doc: str = ""
    optional: bool = True


def data_dirs(name: str) -> list[Path]:
    """Where the project's folder ``name`` (queries, dashboards) lives: the repo's (development) or the installed
    copy (the wheel puts it in ``pt2logs/_data/``, see pyproject's force-include)."""
    package = Path(__file__).resolve().parents[1]  # src/pt2logs
    dirs = [package.parents[1] / name, package / "_data" / name]
    return [d for d in dirs if d.is_dir()]


def query_dirs() -> list[Path]:
    """Where named queries live: the repo's queries/ (development) or the installed copy."""
    return data_dirs("queries")


def read_header(text: str) -> dict[str, str]:
    """The ``-- key: value`` lines a SQL file starts with (named queries, macros), by lower-case key."""
    meta: dict[str, str] = {}
    for ln in text.splitlines():
        if not ln.strip():
            continue
        m = _HEADER.match(ln.strip())
        if not m:
            break
        meta[m.group(1).lower()] = m.group(2).strip()
    return meta


def parse_params(text: str) -> list[Param]:
    """``name (doc), name (doc)``: a header's params (or a macro's columns); ``none`` for none."""
    params = []
    for m in _PARAM.finditer(text):
        doc = (m.group(2) or "").strip()
        if m.group(1).lower() in ("none", "and", "or"):
            continue
        params.append(
            Param(m.group(1), doc, optional="optional" in doc.lower() or "default" in doc.lower())
        )
    return params


def split_items(text: str) -> list[Param]:
    """``name (doc), name, ...`` split at the commas outside parentheses (a doc may hold any; a name may be
    ``NAME.*``): a macro's params and columns."""
    items, depth, cur = [], 0, ""
    for ch in text + ",":
        if ch == "," and depth == 0:
            cur = cur.strip()
            if cur and cur.lower() != "none":
                name, _, doc = cur.partition(" ")
                items.append(Param(name, doc.strip().removeprefix("(").removesuffix(")")))
            cur = ""
            continue
        depth += (ch == "(") - (ch == ")")
        cur += ch
    return items

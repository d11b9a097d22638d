"""Markdown that pastes into a GitHub issue as is (GitHub follows CommonMark + GFM).

Log text is data, never markup: it goes into fenced code blocks whose fence is longer than any run
of backticks inside it (so a ``` in a log cannot close the block), or into code spans chosen the
same way; HTML in a ``<summary>`` is escaped. Long excerpts fold into ``<details>`` sections (blank
lines around the Markdown inside, as GitHub needs to render it).
"""

from __future__ import annotations

import html
import re

_TICKS = re.compile(r"`+")


def _longest_ticks(text: str) -> int:
    return max((len(m.group(0)) for m in _TICKS.finditer(text)), default=0)


def fence(text: str, info: str = "") -> str:
    """``text`` as a fenced code block that nothing inside can close."""
    ticks = "`" * max(3, _longest_ticks(text) + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{ticks}{info}\n{body}{ticks}\n"


def code(text: str) -> str:
    """``text`` as an inline code span (one line; a ``|`` escaped for table cells)."""
    text = " ".join(str(text).split())
    ticks = "`" * (_longest_ticks(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{ticks}{pad}{text}{pad}{ticks}".replace("|", "\\|")


def text(value: str) -> str:
    """Plain words from a log in running text: Markdown and HTML characters escaped."""
    return re.sub(r"([\\`*_{}\[\]<>()#+\-!|~])", r"\\\1", " ".join(str(value).split()))


def details(summary: str, body: str, open_: bool = False) -> str:
    """A collapsible section: ``summary`` is plain text (escaped), ``body`` Markdown."""
    return (f"<details{' open' if open_ else ''}><summary>{html.escape(summary, quote=False)}</summary>\n\n"
            f"{body.rstrip()}\n\n</details>\n")


def table(rows: list[dict], columns: list[str]) -> str:
    """A GFM table; every cell a code span (or empty)."""
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        out.append("| " + " | ".join("" if r.get(c) is None else code(str(r[c])) for c in columns) + " |")
    return "\n".join(out) + "\n"


def cut(text: str, max_lines: int, max_chars: int) -> tuple[str, int]:
    """The first ``max_lines`` lines / ``max_chars`` characters of ``text``, and how many lines were left out."""
    lines = text.splitlines()
    kept: list[str] = []
    size = 0
    for ln in lines[:max_lines]:
        if size + len(ln) + 1 > max_chars:
            break
        kept.append(ln)
        size += len(ln) + 1
    return "\n".join(kept), len(lines) - len(kept)


def cut_tail(text: str, max_lines: int, max_chars: int) -> tuple[str, int]:
    """The last ``max_lines`` lines / ``max_chars`` characters of ``text``, and how many lines were left out."""
    head, left = cut("\n".join(reversed(text.splitlines())), max_lines, max_chars)
    return "\n".join(reversed(head.splitlines())), left

"""Markdown that pastes into a GitHub issue as is (GitHub follows CommonMark + GFM): the one rule for
putting text from logs into Markdown, for every Markdown pt2logs writes (``query -f markdown``,
``advise -f markdown``, ``bundle``).

Log text is data, never markup. It goes into Markdown in one of three ways:

- verbatim, in a fenced block (:func:`fence`) or a code span (:func:`inline_code`; :func:`code` in
  a table cell) whose run of backticks is longer than any inside it, so nothing inside can close it;
- as words in running text (:func:`text`, :func:`prose`): every character that can start inline
  markup is escaped, by :data:`INLINE`;
- as words in a table cell (:func:`cell`): :data:`INLINE` too, less two escapes that CommonMark does
  not need there and that would make identifiers and log prefixes hard to read in the Markdown
  source (``dtype_mismatch``, ``___stack0``, ``[rank0]:``): a ``[`` (no link can form once a ``(``
  after ``]`` is escaped: a table row cannot define a reference) and a ``_`` between two letters or
  digits (never emphasis), or the only other run of ``_`` in the cell (emphasis needs two).

Line starts (``#``, ``>``, ``-``, ``1.``) need nothing: pt2logs never starts a line with log text.
HTML contexts (a ``<details>`` summary) are escaped as HTML (:func:`details`).
"""

from __future__ import annotations

import html
import re

#: what each character could start in inline Markdown, and its escape (a lone ``>`` is inert once
#: ``<`` is escaped; the backslash first, so that one in the data cannot undo an escape)
INLINE = {
    "\\": "\\\\",  # the escape of the next character
    "&": "&amp;",  # an entity
    "<": "&lt;",  # raw HTML, an autolink
    "*": "\\*",  # emphasis
    "_": "\\_",  # emphasis
    "[": "\\[",  # a link or an image
    "`": "\\`",  # a code span
    "~": "\\~",  # strikethrough (GFM)
    "|": "\\|",  # a cell's end (GFM tables)
    "\n": " ",  # a new line, a new block
    "\r": " ",
}
_TEXT = str.maketrans(INLINE)
_CELL = str.maketrans({k: v for k, v in INLINE.items() if k not in "_["})
_TICKS = re.compile(r"`+")
_CODE_SPAN = re.compile(r"(`[^`\n]*`)")
#: a run of _ with a letter or digit on both sides, and the other runs
_UNDERSCORES = re.compile(r"(?<=[^\W_])_+(?=[^\W_])|(_+)")


def text(value: str) -> str:
    """Log text as words in running text (a heading, a list item): one line, no markup."""
    return str(value).translate(_TEXT)


def prose(value: str) -> str:
    """pt2logs' own sentences with log values in code spans (the advice table's evidence): the code
    spans as written (GitHub renders nothing inside them), the rest as :func:`text`."""
    parts = _CODE_SPAN.split(str(value).replace("\r", " ").replace("\n", " "))
    return "".join(p if i % 2 else text(p) for i, p in enumerate(parts))


def cell(value: str) -> str:
    """Log text as words in a GFM table cell: one line, no markup, no cell break (see the module)."""
    s = str(value).translate(_CELL).replace("](", "]\\(")
    runs = [m for m in _UNDERSCORES.finditer(s) if m.group(1)]
    if len(runs) < 2:  # emphasis needs an opening and a closing run
        return s
    return _UNDERSCORES.sub(
        lambda m: m.group(0).replace("_", "\\_") if m.group(1) else m.group(0), s
    )


def _longest_ticks(text: str) -> int:
    return max((len(m.group(0)) for m in _TICKS.finditer(text)), default=0)


def fence(text: str, info: str = "") -> str:
    """``text`` as a fenced code block that nothing inside can close."""
    ticks = "`" * max(3, _longest_ticks(text) + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{ticks}{info}\n{body}{ticks}\n"


def inline_code(text: str) -> str:
    """``text`` as an inline code span (one line) in running text."""
    text = " ".join(str(text).split())
    ticks = "`" * (_longest_ticks(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def code(text: str) -> str:
    """``text`` as an inline code span in a GFM table cell: a ``|`` escaped (GFM reads a row's cells
    before their code spans and takes the backslash out again; in running text it would stay: use
    :func:`inline_code` there)."""
    return inline_code(text).replace("|", "\\|")


def details(summary: str, body: str, open_: bool = False) -> str:
    """A collapsible section: ``summary`` is plain text (escaped as HTML), ``body`` Markdown."""
    return (
        f"<details{' open' if open_ else ''}><summary>{html.escape(summary, quote=False)}</summary>\n\n"
        f"{body.rstrip()}\n\n</details>\n"
    )


def table(rows: list[dict], columns: list[str]) -> str:
    """A GFM table; every cell a code span (or empty)."""
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        out.append(
            "| " + " | ".join("" if r.get(c) is None else code(str(r[c])) for c in columns) + " |"
        )
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

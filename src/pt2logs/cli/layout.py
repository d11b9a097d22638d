"""Fitting a result table into the terminal without losing anything silently.

:func:`fit` decides, for rows of cells and a width, which columns are shown, how wide each is, and
how long text is shortened: text is elided in the middle (a path keeps its end, the file and line),
never cut at the end, and guard or failure reasons wrap over several lines instead, so values such
as ``expected 8, actual 16`` stay visible. When even the narrowest layout is too wide, columns are
hidden from the right. :func:`notes` then names every hidden column and every shortened one, and
says how to see them (``--wide``, or a machine format). ``wide`` shows every column and every cell
in full, however long the lines get. A result of a few rows that is too wide is shown as
:func:`blocks` instead, one per row, so nothing is hidden.

:func:`rich_table` draws a layout; :mod:`pt2logs.cli.outputs` (``--format table``) and
:mod:`pt2logs.cli.render` (summary, diff) use it.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.cells import cell_len

#: space between two columns (rich's padding of one on each side)
GAP = 2
#: text columns are not shortened below this (or their header)
MIN_TEXT = 12
#: columns whose text wraps onto more lines instead of being elided: guard and failure reasons,
#: where the end of the text (``expected 8, actual 16``) is the point, and lists of what differs
WRAP = frozenset({"reason", "differs_in", "evidence"})
MIN_WRAP = 20


def terminal_width() -> int:
    """The terminal's width ($COLUMNS first; 100 in a pipe), at least 80."""
    return max(80, shutil.get_terminal_size((100, 24)).columns)


def one_line(s: str) -> str:
    """Text on one line: newlines and runs of spaces (the padding inside guard text) as one space."""
    return " ".join(s.split())


def elide(s: str, width: int) -> str:
    """``s`` in at most ``width`` cells: the middle replaced by …, or, for a path, its start."""
    if cell_len(s) <= width:
        return s
    if width <= 1:
        return "…"[:width]
    if "/" in s and " " not in s:  # a path (or path:line): the end says which file
        out = "…" + s[-(width - 1) :]
    else:
        head = (width - 1) // 2
        out = s[:head] + "…" + s[len(s) - (width - 1 - head) :]
    while cell_len(out) > width:  # wide characters
        out = out[:-2] + "…" if len(out) > 2 else "…"
    return out


@dataclass
class Layout:
    columns: list[str]  # shown, in order
    widths: dict[str, int]
    rows: list[list[str]]  # the shown cells: elided to their width, or whole (wrapping columns)
    hidden: list[str] = field(default_factory=list)
    shortened: list[str] = field(default_factory=list)  # shown columns with elided or wrapped cells
    wrap: set[str] = field(default_factory=set)  # shown columns whose cells wrap at their width
    width: int = 0  # the table's width


def fit(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[str],
    width: int,
    *,
    fixed: Sequence[str] = (),
    wide: bool = False,
    cell: Any = str,
) -> Layout:
    """Lay out ``columns`` of ``rows`` in ``width`` cells. ``fixed`` columns (numbers, times) are never
    shortened; ``cell`` turns a value into text."""
    text = {c: [one_line(cell(r.get(c))) for r in rows] for c in columns}
    natural = {c: max([cell_len(c)] + [cell_len(x) for x in text[c]]) for c in columns}
    if wide:
        return Layout(
            list(columns),
            natural,
            [[text[c][i] for c in columns] for i in range(len(rows))],
            width=sum(natural.values()) + GAP * max(0, len(columns) - 1),
        )
    least = {
        c: natural[c]
        if c in fixed
        else max(cell_len(c), min(natural[c], MIN_WRAP if c in WRAP else MIN_TEXT))
        for c in columns
    }
    shown = list(columns)
    while len(shown) > 1 and sum(least[c] for c in shown) + GAP * (len(shown) - 1) > width:
        shown.pop()
    budget = width - GAP * (len(shown) - 1)
    nat, low = {c: natural[c] for c in shown}, {c: least[c] for c in shown}
    # wrapping loses nothing: narrow the wrapping columns first, and elide other text only if that is not enough
    others = sum(nat[c] for c in shown if c not in WRAP)
    wrapping = [c for c in shown if c in WRAP]
    if wrapping and others + sum(low[c] for c in wrapping) <= budget:
        widths = {
            **nat,
            **_share({c: nat[c] for c in wrapping}, {c: low[c] for c in wrapping}, budget - others),
        }
    else:
        widths = {
            **_share(
                {c: nat[c] for c in shown if c not in WRAP},
                {c: low[c] for c in shown if c not in WRAP},
                budget - sum(low[c] for c in wrapping),
            ),
            **{c: low[c] for c in wrapping},
        }
        widths = {c: widths[c] for c in shown}
    wrap = {c for c in shown if c in WRAP and widths[c] < natural[c]}
    cut = [
        [text[c][i] if c in wrap else elide(text[c][i], widths[c]) for c in shown]
        for i in range(len(rows))
    ]
    shortened = [c for c in shown if widths[c] < natural[c]]
    return Layout(
        shown,
        widths,
        cut,
        [c for c in columns if c not in shown],
        shortened,
        wrap,
        sum(widths.values()) + GAP * max(0, len(shown) - 1),
    )


def _share(natural: dict[str, int], least: dict[str, int], budget: int) -> dict[str, int]:
    """Widths that fit ``budget``: every column its natural width if they all fit, else the widest ones
    capped at one common width (never below their least), the spare cells going left to right."""
    if not natural or sum(natural.values()) <= budget:
        return dict(natural)

    def total(cap: int) -> int:
        return sum(max(least[c], min(natural[c], cap)) for c in natural)

    lo, hi = 0, max(natural.values())
    while lo < hi:  # the largest cap that fits
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if total(mid) <= budget else (lo, mid - 1)
    widths = {c: max(least[c], min(natural[c], lo)) for c in natural}
    spare = budget - sum(widths.values())
    for c in natural:
        if spare <= 0:
            break
        if widths[c] < natural[c]:
            widths[c] += 1
            spare -= 1
    return widths


def notes(layout: Layout, width: int, more: str) -> list[str]:
    """What the table does not show in full, and how to see it (``more``: e.g. "--wide or -f json")."""
    out = []
    if layout.hidden:
        out.append(f"hidden at {width} columns: {', '.join(layout.hidden)} (to see them: {more})")
    cut = [c for c in layout.shortened if c not in layout.wrap]
    if cut:
        out.append(f"cut to fit (…): {', '.join(cut)} (in full: {more})")
    return out


#: a result of at most this many rows that does not fit the width is shown one block per row (every
#: column, long values wrapped) rather than with columns hidden, like psql's expanded display
BLOCK_ROWS = 10


def blocks(rows: Sequence[dict[str, Any]], columns: Sequence[str], cell: Any = str) -> list[Any]:
    """Each row as a block of ``column  value`` lines (rich renderables): nothing hidden or cut, long
    values wrapped at the console's width."""
    from rich.table import Table
    from rich.text import Text

    key = max(cell_len(c) for c in columns)
    out: list[Any] = []
    for i, r in enumerate(rows):
        out.append(Text(f"── row {i + 1} of {len(rows)} ──"))
        t = Table(box=None, show_header=False, show_edge=False, pad_edge=False)
        t.add_column(width=key, no_wrap=True, style="bold")
        t.add_column(no_wrap=False, overflow="fold")
        for c in columns:
            t.add_row(Text(c), Text(one_line(cell(r.get(c)))))
        out.append(t)
    return out


def rich_table(layout: Layout, right: Sequence[str] = (), title: str | None = None) -> Any:
    """The layout as a rich Table: every value a :class:`rich.text.Text` (log text is never markup),
    ``right`` columns right-justified (numbers)."""
    from rich.table import Table
    from rich.text import Text

    t = Table(
        title=title,
        title_justify="left",
        title_style="bold",
        header_style="bold",
        show_edge=False,
        pad_edge=False,
        box=None,
    )
    for c in layout.columns:
        wraps = c in layout.wrap
        t.add_column(
            Text(c),
            justify="right" if c in right else "left",
            no_wrap=not wraps,
            overflow="fold" if wraps else "ellipsis",
            width=layout.widths[c] if wraps else None,
            min_width=layout.widths[c],
        )
    for row in layout.rows:
        t.add_row(*[Text(v) for v in row])
    return t

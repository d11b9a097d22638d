"""Output formats: the registry behind every command's ``--format``.

Each format writes a pyarrow Table (the rows of a query) to a binary stream, and declares what
else it can do: ``binary`` formats need ``--output FILE`` or a redirect, ``report`` formats can also
write a summary or diff (several sections; :mod:`pt2logs.cli.render` does that). Commands derive
their ``--format`` choices from here (:func:`pt2logs.cli.options.format_option`), never from a list
of their own. ``table`` is for people (rich, fits the terminal and says what it hid or shortened;
``--wide`` shows everything); the others are for machines and files.
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

if TYPE_CHECKING:  # pyarrow loads with the first rows written, not at `--help`
    import pyarrow as pa

Writer = Callable[["pa.Table", BinaryIO], None]

#: what a format can write besides rows
CAPABILITIES = ("rows", "report")


class OutputFormat(NamedTuple):  # (a NamedTuple: `--help` does not load dataclasses)
    name: str
    write: Writer
    writes: frozenset[str] = frozenset({"rows"})
    binary: bool = False  # not text: refuse to print it on a terminal
    fits: bool = False  # laid out for the terminal's width: takes ``wide`` (every column, in full)

    def __call__(self, t: pa.Table, out: BinaryIO, wide: bool = False) -> None:
        if self.fits:
            self.write(t, out, wide)  # type: ignore[call-arg]
        else:
            self.write(t, out)


OUTPUT_FORMATS: dict[str, OutputFormat] = {}


def output_format(
    name: str, *, writes: tuple[str, ...] = ("rows",), binary: bool = False, fits: bool = False
) -> Callable[[Any], Any]:
    assert set(writes) <= set(CAPABILITIES), writes

    def deco(fn: Any) -> Any:
        OUTPUT_FORMATS[name] = OutputFormat(name, fn, frozenset(writes), binary, fits)
        return fn

    return deco


def formats_that(capability: str) -> list[str]:
    """The names of the formats that can write ``capability`` (rows, report), in registry order."""
    assert capability in CAPABILITIES, capability
    return [n for n, f in OUTPUT_FORMATS.items() if capability in f.writes]


def _jsonable(v: Any) -> Any:
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    return v


def _rows(t: pa.Table) -> list[dict[str, Any]]:
    return t.to_pylist()


def cell(v: Any) -> str:
    """A value as short text for tables."""
    if v is None:
        return ""
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return str(v)
        if abs(v) >= 1e6:
            return f"{v:,.0f}"
        s = f"{v:,.3f}".rstrip("0").rstrip(".")
        return "0" if s in ("-0", "") else s
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    if isinstance(v, dt.datetime):
        return v.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(v, list):
        return ", ".join(cell(x) for x in v)
    return str(v)


#: the most rows the table format lays out; the others are counted in its last line, never dropped silently
TABLE_ROWS = 1000


@output_format("table", writes=("rows", "report"), fits=True)
def write_table(t: pa.Table, out: BinaryIO, wide: bool = False) -> None:
    """For people: fits the terminal; long text is shortened in the middle (reasons wrap), columns that
    do not fit are hidden, and a note names both (``wide``: every column, every cell in full). At most
    :data:`TABLE_ROWS` rows are laid out (a terminal table of a whole fleet costs minutes and gigabytes);
    a last line says how many more there are and how to get them all."""
    import pyarrow as pa

    from pt2logs.cli.layout import BLOCK_ROWS, blocks, fit, notes, rich_table, terminal_width

    total = t.num_rows
    if total > TABLE_ROWS:
        t = t.slice(0, TABLE_ROWS)
    width = terminal_width()
    numeric = [
        n
        for n, f in zip(t.column_names, t.schema)
        if pa.types.is_integer(f.type)
        or pa.types.is_floating(f.type)
        or pa.types.is_decimal(f.type)
    ]
    fixed = numeric + [
        n
        for n, f in zip(t.column_names, t.schema)
        if pa.types.is_temporal(f.type) or pa.types.is_boolean(f.type)
    ]
    rows = t.to_pylist()
    layout = fit(rows, t.column_names, width, fixed=fixed, wide=wide, cell=cell)
    buf = io.StringIO()
    console = text_console(buf, max(width, layout.width))
    n = f"{total} row{'s' if total != 1 else ''}"
    if total > t.num_rows:
        n += (
            f" (the first {t.num_rows:,} shown; {total - t.num_rows:,} more rows not shown: "
            "-f csv, json, ndjson or parquet for every row, or LIMIT/-p limit for fewer)"
        )
    if layout.hidden and t.num_rows <= BLOCK_ROWS:
        console.print(
            f"{len(t.column_names)} columns do not fit {width}: one block per row (--wide: one line per row)"
        )
        for block in blocks(rows, t.column_names, cell):
            console.print(block)
        console.print(n)
    else:
        console.print(rich_table(layout, numeric))
        console.print(n)
        for line in notes(layout, width, "--wide or -f csv/json"):
            console.print(line, markup=False)
    out.write(buf.getvalue().encode())


def text_console(file: Any, width: int) -> Any:
    """A rich console that writes plain text ``width`` cells wide (no colour, markup only where asked)."""
    from rich.console import Console

    return Console(
        file=file,
        width=width,
        force_terminal=False,
        color_system=None,
        emoji=False,
        highlight=False,
        soft_wrap=False,
    )


@output_format("csv")
def write_csv(t: pa.Table, out: BinaryIO) -> None:
    buf = io.StringIO()
    import csv

    w = csv.writer(buf, lineterminator="\n")
    w.writerow(t.column_names)
    for row in t.to_pylist():
        w.writerow(
            [
                cell(v) if isinstance(v, list) else ("" if v is None else _jsonable(v))
                for v in row.values()
            ]
        )
    out.write(buf.getvalue().encode())


@output_format("json", writes=("rows", "report"))
def write_json(t: pa.Table, out: BinaryIO) -> None:
    import orjson

    out.write(
        orjson.dumps(_rows(t), default=str, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
        + b"\n"
    )


@output_format("ndjson")
def write_ndjson(t: pa.Table, out: BinaryIO) -> None:
    import orjson

    for row in _rows(t):
        out.write(orjson.dumps(row, default=str, option=orjson.OPT_NON_STR_KEYS) + b"\n")


@output_format("markdown")
def write_markdown(t: pa.Table, out: BinaryIO) -> None:
    """A GFM table: column names and values as text in cells (:func:`pt2logs.reports.markdown.cell`)."""
    from pt2logs.reports.markdown import cell as md_cell

    lines = [
        "| " + " | ".join(md_cell(c) for c in t.column_names) + " |",
        "|" + "---|" * len(t.column_names),
    ]
    for row in t.to_pylist():
        lines.append("| " + " | ".join(md_cell(cell(v)) for v in row.values()) + " |")
    out.write(("\n".join(lines) + "\n").encode())


@output_format("parquet", binary=True)
def write_parquet(t: pa.Table, out: BinaryIO) -> None:
    import pyarrow.parquet as pq

    pq.write_table(t, out, compression="zstd")

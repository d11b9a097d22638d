"""Output formats: the registry behind every command's ``--format``.

Each format writes rows (a pyarrow Table, or a RecordBatchReader streamed batch by batch so that
memory does not grow with the result: ``pt2logs query``) to a binary stream, and declares what
else it can do: ``binary`` formats need ``--output FILE`` or a redirect, ``report`` formats can also
write a summary or diff (several sections; :mod:`pt2logs.cli.render` does that). Commands derive
their ``--format`` choices from here (:func:`pt2logs.cli.options.format_option`), never from a list
of their own. ``table`` is for people (rich, fits the terminal and says what it hid or shortened;
``--wide`` shows everything); the others are for machines and files.
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

if TYPE_CHECKING:  # pyarrow loads with the first rows written, not at `--help`
    import pyarrow as pa

#: rows: a pyarrow Table or RecordBatchReader; returns how many rows there were
Writer = Callable[..., int]

#: what a format can write besides rows
CAPABILITIES = ("rows", "report")


class OutputFormat(NamedTuple):  # (a NamedTuple: `--help` does not load dataclasses)
    name: str
    write: Writer
    writes: frozenset[str] = frozenset({"rows"})
    binary: bool = False  # not text: refuse to print it on a terminal
    fits: bool = False  # laid out for the terminal's width: takes ``wide`` (every column, in full)
    batch_rows: int = 2048  # the rows of a batch it is streamed (what it holds at a time)

    def __call__(self, rows: Any, out: BinaryIO, wide: bool = False) -> int:
        """Write ``rows`` (a Table or a RecordBatchReader) to ``out``; the number of rows."""
        if self.fits:
            return self.write(rows, out, wide)
        return self.write(rows, out)


OUTPUT_FORMATS: dict[str, OutputFormat] = {}


def output_format(
    name: str,
    *,
    writes: tuple[str, ...] = ("rows",),
    binary: bool = False,
    fits: bool = False,
    batch_rows: int = 2048,
) -> Callable[[Any], Any]:
    assert set(writes) <= set(CAPABILITIES), writes

    def deco(fn: Any) -> Any:
        OUTPUT_FORMATS[name] = OutputFormat(name, fn, frozenset(writes), binary, fits, batch_rows)
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


def _batches(rows: Any) -> Iterator[pa.RecordBatch]:
    """The batches of a Table or a RecordBatchReader, one at a time."""
    return iter(rows.to_batches() if hasattr(rows, "to_batches") else rows)


def _rows(rows: Any) -> Iterator[dict[str, Any]]:
    """The rows of a Table or a RecordBatchReader as dicts, a batch in memory at a time."""
    for b in _batches(rows):
        yield from b.to_pylist()


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


def _first_rows(rows: Any, n: int) -> tuple[pa.Table, int]:
    """The first ``n`` rows as a Table and how many rows there are in all: only ``n`` rows (and a
    batch) are ever held; the rest are counted as they stream by."""
    import pyarrow as pa

    kept: list[pa.RecordBatch] = []
    held = total = 0
    for b in _batches(rows):
        total += b.num_rows
        if held < n:
            kept.append(b.slice(0, n - held))
            held += kept[-1].num_rows
    return pa.Table.from_batches(kept, rows.schema), total


@output_format("table", writes=("rows", "report"), fits=True)
def write_table(rows: Any, out: BinaryIO, wide: bool = False) -> int:
    """For people: fits the terminal; long text is shortened in the middle (reasons wrap), columns that
    do not fit are hidden, and a note names both (``wide``: every column, every cell in full). At most
    :data:`TABLE_ROWS` rows are laid out and held (a terminal table of a whole fleet costs minutes and
    gigabytes); a last line says how many more there are and how to get them all."""
    from pt2logs.cli.layout import BLOCK_ROWS, blocks, fit, notes, rich_table, terminal_width

    if hasattr(rows, "to_arrow") and rows.num_rows > TABLE_ROWS:
        rows = rows.to_arrow()
    if hasattr(
        rows, "to_arrow"
    ):  # a kept answer's rows (pt2logs.query.answer_rows.Rows): no pyarrow
        t, total, numeric, fixed = rows, rows.num_rows, rows.numeric, rows.fixed
    else:
        t, total = _first_rows(rows, TABLE_ROWS)
        numeric, fixed = _aligned(t.schema)
    width = terminal_width()
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
    return total


def _aligned(schema: Any) -> tuple[list[str], list[str]]:
    """The columns shown right-justified (numbers) and those never shortened (numbers, times, booleans)."""
    import pyarrow as pa

    numeric = [
        f.name
        for f in schema
        if pa.types.is_integer(f.type)
        or pa.types.is_floating(f.type)
        or pa.types.is_decimal(f.type)
    ]
    fixed = numeric + [
        f.name for f in schema if pa.types.is_temporal(f.type) or pa.types.is_boolean(f.type)
    ]
    return numeric, fixed


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
def write_csv(rows: Any, out: BinaryIO) -> int:
    import csv

    n = 0
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(rows.schema.names)
    for b in _batches(rows):
        for row in b.to_pylist():
            w.writerow(
                [
                    cell(v) if isinstance(v, list) else ("" if v is None else _jsonable(v))
                    for v in row.values()
                ]
            )
        n += b.num_rows
        out.write(buf.getvalue().encode())
        buf.seek(0)
        buf.truncate()
    out.write(buf.getvalue().encode())
    return n


@output_format("json", writes=("rows", "report"))
def write_json(rows: Any, out: BinaryIO) -> int:
    """A JSON array (indented by 2), written a batch at a time: the bytes ``orjson.dumps(all rows,
    OPT_INDENT_2)`` would give, without holding them."""
    import orjson

    n = 0
    option = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
    for b in _batches(rows):
        if b.num_rows:
            part = orjson.dumps(
                b.to_pylist(), default=str, option=option
            )  # b"[\n  {...},\n  {...}\n]"
            out.write((b"[\n" if n == 0 else b",\n") + part[2:-2])
            n += b.num_rows
    out.write(b"\n]\n" if n else b"[]\n")
    return n


@output_format("ndjson")
def write_ndjson(rows: Any, out: BinaryIO) -> int:
    import orjson

    n = 0
    for row in _rows(rows):
        out.write(orjson.dumps(row, default=str, option=orjson.OPT_NON_STR_KEYS) + b"\n")
        n += 1
    return n


@output_format("markdown")
def write_markdown(rows: Any, out: BinaryIO) -> int:
    """A GFM table: column names and values as text in cells (:func:`pt2logs.reports.markdown.cell`)."""
    from pt2logs.reports.markdown import cell as md_cell

    names = rows.schema.names
    out.write(("| " + " | ".join(md_cell(c) for c in names) + " |\n").encode())
    out.write(("|" + "---|" * len(names) + "\n").encode())
    n = 0
    for b in _batches(rows):
        lines = [
            "| " + " | ".join(md_cell(cell(v)) for v in row.values()) + " |\n"
            for row in b.to_pylist()
        ]
        out.write("".join(lines).encode())
        n += b.num_rows
    return n


#: rows a Parquet row group holds (pyarrow's default for ``write_table``, whose files this keeps)
PARQUET_ROW_GROUP = 1024 * 1024
#: the chunks of DuckDB's Arrow tables with several threads (131,072 rows with one): Parquet's pages depend on the
#: batches written, and these keep the bytes of a whole table so chunked
PARQUET_BATCH = 122_880


@output_format("parquet", binary=True, batch_rows=PARQUET_BATCH)
def write_parquet(rows: Any, out: BinaryIO) -> int:
    """zstd Parquet, written a row group at a time: the bytes ``pq.write_table`` writes for the whole
    result, holding at most a row group (:data:`PARQUET_ROW_GROUP` rows) and a batch."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 0
    held: list[pa.RecordBatch] = []
    with pq.ParquetWriter(out, rows.schema, compression="zstd") as w:
        for b in _batches(rows):
            held.append(b)
            n += b.num_rows
            if sum(h.num_rows for h in held) >= PARQUET_ROW_GROUP:
                t = pa.Table.from_batches(held, rows.schema)
                w.write_table(t.slice(0, PARQUET_ROW_GROUP), PARQUET_ROW_GROUP)
                held = t.slice(PARQUET_ROW_GROUP).to_batches()
        if held or n == 0:
            w.write_table(pa.Table.from_batches(held, rows.schema), PARQUET_ROW_GROUP)
    return n

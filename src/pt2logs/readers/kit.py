"""The reader kit: what every input format's reader shares.

A format is a :class:`~pt2logs.readers.format.Format` (its facts: sniffer, reader, role, line readers,
layout...). Its reader never opens files, prints or touches DuckDB: it gets byte chunks and a
:class:`FileContext`, fills its :class:`~pt2logs.readers.read_stats.ReadStats` (re-exported here), and
puts rows in a :class:`RowSink`.

Shared rules, stated once:

* **Lines** (:func:`iter_lines`): numbered from 1, without their end of line (``\\n`` or ``\\r\\n``);
  chunks may cut lines anywhere. A line longer than :data:`MAX_TEXT_LINE` (1 MiB) keeps its first
  MAX_TEXT_LINE bytes; the rest is passed over to its newline without being held, and the cut is a
  ``line_too_long`` warning at file:line giving the line's length. A run of blank lines is one item
  (:func:`read_lines` hands its length to the reader that took its first line): a file of newlines
  costs regex matches, not Python lines.
* **Whole documents** (:func:`read_document`): JSON dumps, kernel specs, debug files are read whole
  up to :data:`MAX_JSON_DOC` (8 MiB, JSON) or :data:`MAX_DOC` (16 MiB, text) bytes, so that what
  they expand to stays far under 300 MB. A larger JSON one is an error (``too_large``) naming where
  the read stopped, and is not read; a larger text one keeps its whole lines up to the cap, with a
  ``too_large`` warning giving its size. Rows leave in batches as they are made.
* **Bad input** (:func:`add_error`): an ``ingest_errors`` row with file, line, kind, severity and a
  ≤ :data:`EXCERPT`-byte excerpt, counted in the file's stats. ``error`` = could not be read;
  ``warning`` = kept but suspicious.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa

from pt2logs.readers import identity_cols
from pt2logs.readers.bounded import (  # noqa: F401  (the kit's names: readers import them from here)
    BLANK_RUN,
    EXCERPT,
    MAX_DOC,
    MAX_JSON_DOC,
    MAX_LINE,
    MAX_TEXT_LINE,
    ErrorSink,
    iter_lines,
    whole,
)
from pt2logs.readers.lines.unwrapped import lines_of
from pt2logs.readers.read_stats import TORCH_SOURCES, ReadStats, repro_torch_version  # noqa: F401  (the kit's names)
from pt2logs.readers.segment_rows import Derived, SegmentRows
from pt2logs.tables import TABLES
from pt2logs.tables.rows import Rows, TupleRows

#: what a reader yields: (table name, record batch)
Batch = tuple[str, pa.RecordBatch]


@dataclass
class FileContext:
    """Where the bytes come from; readers never open files themselves."""

    file: str  # relative path shown in rows
    path: str = ""  # full path or URL, for ingest_errors
    rank: int | None = None  # rank from the file name / head, when the content has none
    mtime: float | None = None
    batch_rows: int = 50_000
    batch_bytes: int = 8 << 20
    stats: ReadStats = field(default_factory=ReadStats)
    #: for a piece of a split file: what the bytes before it established (pt2logs.ingestion.split.PieceStart)
    piece: Any = None
    #: byte chunks of another file, by path relative to this file's folder (set by ingest; readers of
    #: multi-file formats such as a tlparse output folder use it); raises OSError when there is none
    open_sibling: Callable[[str], Iterable[bytes]] | None = None


def error_row(
    path: str,
    kind: str,
    line_no: int | None,
    message: str,
    excerpt: bytes | str = b"",
    severity: str = "error",
    rank: int | None = None,
) -> dict[str, Any]:
    """An ``ingest_errors`` row (the one place it is built: readers through :func:`add_error`, the ingest
    layer for a file or folder that could not be read)."""
    if isinstance(excerpt, bytes):
        excerpt = excerpt[:EXCERPT].decode("utf-8", "replace")
    return {
        "rank": rank,
        "path": path,
        "line_no": line_no,
        "kind": kind,
        "severity": severity,
        "message": message,
        "excerpt": excerpt[:EXCERPT],
    }


def add_error(
    rows: Rows,
    ctx: FileContext,
    kind: str,
    line_no: int | None,
    message: str,
    excerpt: bytes | str = b"",
    severity: str = "error",
    rank: int | None = None,
) -> None:
    """Count one bad piece of input in ``ctx.stats`` and add its ``ingest_errors`` row to ``rows``."""
    if severity == "warning":
        ctx.stats.warnings += 1
    else:
        ctx.stats.errors += 1
    rows.add(
        error_row(
            ctx.path or ctx.file,
            kind,
            line_no,
            message,
            excerpt,
            severity,
            ctx.rank if rank is None else rank,
        )
    )


class RowSink:
    """The rows one reader makes from one file, by table, and its ``ingest_errors`` rows.

    ``add`` fills ``file`` and merges an integer ``ts`` into the file's time range; ``full()`` says a
    batch is due (``ctx.batch_rows`` rows or ``ctx.batch_bytes`` counted by the reader through
    ``nbytes``); ``flush()`` yields every non-empty table as a batch, errors last.
    """

    def __init__(self, ctx: FileContext, batch_rows: int | None = None):
        self.ctx = ctx
        self.stats = ctx.stats
        self.rows: dict[str, Rows | TupleRows | SegmentRows] = {}
        self.errors = Rows(TABLES["ingest_errors"])
        self.batch_rows = batch_rows or ctx.batch_rows
        self.n = 0  # rows added since the last flush
        self.nbytes = 0  # bytes of text added since the last flush, as counted by the reader
        #: what the line being read carried in its collector's framing and launchers' prefixes
        #: (:class:`~pt2logs.readers.lines.carried.Carried`), None for a line that carried nothing (read_lines)
        self.carried: Any = None
        self.lines_read = 0  # the file's lines, when its records were joined (read_lines)

    def table(self, name: str) -> Rows:
        r = self.rows.get(name)
        if r is None:
            r = self.rows[name] = Rows(TABLES[name])
        return r  # type: ignore[return-value]

    def tuples(self, name: str, fields: tuple[str, ...]) -> TupleRows:
        """A tuple accumulator for a hot table (see :class:`~pt2logs.tables.rows.TupleRows`)."""
        r = self.rows.get(name)
        if r is None:
            r = self.rows[name] = TupleRows(TABLES[name], fields)
        return r  # type: ignore[return-value]

    def segments(self, name: str, derived: Derived | None = None) -> SegmentRows:
        """A piece accumulator (see :class:`~pt2logs.readers.segment_rows.SegmentRows`; ``derived``: when it is made)."""
        r = self.rows.get(name)
        if r is None:
            r = self.rows[name] = SegmentRows(TABLES[name], derived)
        elif not isinstance(r, SegmentRows):
            raise TypeError(
                f"{name}: rows were added one by one before; a table takes pieces from its first row on"
            )
        return r

    def add(self, table: str, row: dict[str, Any]) -> None:
        row.setdefault("file", self.ctx.file)
        identity_cols.fill(table, row, self.stats)
        self.table(table).add(row)
        self.n += 1
        ts = row.get("ts")
        if type(ts) is int:
            self.stats.merge_ts(ts, ts)

    def error(
        self,
        kind: str,
        line_no: int | None,
        message: str,
        excerpt: bytes | str = b"",
        severity: str = "error",
        rank: int | None = None,
    ) -> None:
        add_error(self.errors, self.ctx, kind, line_no, message, excerpt, severity, rank)
        self.n += 1

    def warn(
        self, kind: str, line_no: int | None, message: str, excerpt: bytes | str = b""
    ) -> None:
        self.error(kind, line_no, message, excerpt, "warning")

    def full(self) -> bool:
        return self.n >= self.batch_rows or self.nbytes >= self.ctx.batch_bytes

    def bad_value(self, table: str, column: str, value: Any, line_no: Any) -> None:
        """A value that fits no column of its table: the row is kept with NULL there, and this says so."""
        text = repr(value)
        self.warn(
            "bad_value",
            line_no if type(line_no) is int else None,
            f"{table}.{column}: {text[:80]}{'…' if len(text) > 80 else ''} does not fit the column; stored as NULL, row kept",
            text,
        )

    def flush(self) -> Iterator[Batch]:
        for name, rows in self.rows.items():
            if len(rows):
                yield name, rows.take(self.bad_value)
        if len(self.errors):
            yield "ingest_errors", self.errors.take()
        self.n = self.nbytes = 0


def read_document(
    chunks: Iterable[bytes],
    sink: RowSink,
    what: str = "file",
    max_bytes: int = MAX_DOC,
    keep_head: bool = False,
) -> bytes | None:
    """The file being read, whole (at most ``max_bytes``: :data:`MAX_DOC` for text, :data:`MAX_JSON_DOC`
    for JSON), with ``stats.lines`` set. A larger one: with ``keep_head`` (text), its lines up to
    ``max_bytes`` and a ``too_large`` warning giving its size (the rest is passed over, not held);
    else None and a ``too_large`` error (a cut JSON document could not be read anyway)."""
    it = iter(chunks)
    parts: list[bytes] = []
    size = 0
    for c in it:
        if size + len(c) <= max_bytes:
            parts.append(c)
            size += len(c)
            continue
        if not keep_head:
            sink.error(
                "too_large",
                None,
                f"{what} goes on past byte {max_bytes:,} ({max_bytes >> 20} MiB, the most read "
                f"whole for this format, to keep memory bounded): not read",
            )
            return None
        parts.append(c[: max_bytes - size])
        total = size + len(c) + sum(len(x) for x in it)
        data = b"".join(parts)
        data = data[: data.rfind(b"\n") + 1] or data  # whole lines
        sink.warn(
            "too_large",
            None,
            f"{what} of {total:,} bytes: its first {len(data):,} bytes (whole lines, up to "
            f"{max_bytes >> 20} MiB, the most read for this format) were read, the rest from byte {len(data):,} on skipped",
        )
        break
    else:
        data = b"".join(parts)
    sink.stats.lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    return data


def decode(raw: bytes, line_no: int | None, sink: RowSink) -> str:
    """UTF-8 text of one line or document; invalid bytes are replaced and reported (a warning)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        sink.warn(
            "decode_error",
            line_no,
            f"invalid UTF-8 at byte {e.start}; kept with U+FFFD replacements",
            raw[max(0, e.start - 40) : e.start + 40],
        )
        return raw.decode("utf-8", "replace")


# ----------------------------------------------------------------------------- composable line readers


class LineReader(Protocol):
    """A text format's line handler, one per file. Several are chained over one capture
    (:func:`read_lines`): each line goes to the first one that takes it."""

    def take(self, line_no: int, text: str) -> bool:
        """Read the line if it is this format's (True), else leave it to the next reader (False)."""

    def finish(self) -> None:
        """The file ended: close whatever is open."""

    # optional: ``blank_lines(line_no, k)``: the ``k`` blank lines from ``line_no`` on, after the blank
    # line just before them, which this reader took (:func:`read_lines`); a reader without it passes
    # them over (their numbers are still counted)


LineReaderFactory = Callable[[RowSink], LineReader]


def read_lines(
    chunks: Iterable[bytes], ctx: FileContext, factories: Iterable[LineReaderFactory]
) -> Iterator[Batch]:
    """Drive a chain of line readers over one text capture; the last one must take every line (it
    keeps lines nobody else owns, e.g. as foreign ``log_lines``). Rows leave in batches."""
    sink = RowSink(ctx)
    chain = [f(sink) for f in factories]
    takers = [r.take for r in chain]
    last = 0
    for line_no, raw in lines_of(
        chunks, sink
    ):  # iter_lines, the collector's framing taken off (lines/unwrapped.py)
        last = line_no
        if (
            raw[:1] == b"\n"
        ):  # a run of len(raw) + 1 blank lines: the first as a line, the rest in bulk
            last = line_no + len(raw)
            for r in chain:
                if r.take(line_no, ""):
                    more = getattr(r, "blank_lines", None)
                    if more is not None:
                        more(line_no + 1, len(raw))
                    break
        else:
            text = decode(raw, line_no, sink)
            for take in takers:
                if take(line_no, text):
                    break
        if sink.full():
            yield from sink.flush()
    for r in chain:
        r.finish()
    ctx.stats.lines = max(last, sink.lines_read)
    yield from sink.flush()

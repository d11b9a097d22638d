"""TORCH_TRACE structured trace → ``events`` and every table derived from it.

``read_trace(chunks, ctx)`` is a pure function from the bytes of one trace file to ``(table,
RecordBatch)`` pairs. It keeps per-file state only (:class:`~pt2logs.readers.trace.state.TraceState`),
so its memory does not grow with the file. Rows are buffered column-wise and leave as Arrow batches
every ``ctx.batch_rows`` records.

Every record becomes one ``events`` row (lossless: envelope JSON and payload text). Then the handler
registered for its event key (or, for artifacts, for its artifact name) may add rows to derived
tables. Kinds with no handler are counted as ``unknown`` in the file's stats: they stay queryable in
``events``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from pt2logs.readers.format import TRACE, Format, Layout
from pt2logs.readers.kit import Batch, FileContext
from pt2logs.readers.trace import fast as trace_fast
from pt2logs.readers.trace.loop import read_records
from pt2logs.readers.trace.native import split_records
from pt2logs.readers.trace.records import HEADER_RE
from pt2logs.readers.trace.state import TraceState


def read_trace(chunks: Iterable[bytes], ctx: FileContext) -> Iterator[Batch]:
    """Parse one TORCH_TRACE file given as byte chunks; yield ``(table, batch)``."""
    st = TraceState(ctx)
    first_line = 1
    if (
        ctx.piece is not None
    ):  # a piece of a split file starts with the state of the bytes before it
        first_line = ctx.piece.first_line
        st.strings.update(ctx.piece.strings)
        st.scratch(None).update(ctx.piece.flags)
        if ctx.piece.rank is not None:
            st.rank = ctx.piece.rank
    if trace_fast.usable(ctx):
        yield from trace_fast.read_records_native(st, chunks, first_line)
    else:
        yield from read_records(st, split_records(chunks, st.error, first_line))


def _head_lines(head: bytes, n: int = 40) -> list[bytes]:
    # the last line of a head may be cut: ignore it unless it is the only one
    lines = head.split(b"\n", n)[:n]
    return [ln.rstrip(b"\r") for ln in lines if ln.strip()]


def sniff_trace(head: bytes, name: str) -> bool:
    """A TORCH_TRACE file: glog headers followed by a JSON object, payload lines with TABs.

    Most glog lines of the head must be JSON headers: a stderr capture where one log message
    happens to start with ``{`` is TORCH_LOGS text, not a trace."""
    json_headers = text_lines = 0
    for ln in _head_lines(head):
        if ln.startswith(b"\t"):
            continue
        m = HEADER_RE.match(ln)
        if m is None:
            continue
        if ln[m.end() : m.end() + 1] == b"{":
            json_headers += 1
        else:
            text_lines += 1
    return json_headers > 0 and json_headers >= 2 * text_lines


#: TORCH_TRACE writes one file per rank, ``dedicated_log_torch_trace_rank_<N>_<random>.log``
TRACE_FILES = re.compile(r"dedicated_log_torch_trace_")

FORMAT = Format(
    "torch_trace",
    "TORCH_TRACE structured trace (dedicated_log_torch_trace_*.log)",
    sniff_trace,
    read_trace,
    role=TRACE,
    source="trace",
    source_rank=1,
    splits=True,
    switch="TORCH_TRACE (structured trace)",
    layout=Layout(rank_files=TRACE_FILES),
)

"""Readers: one module per input format, each a pure function from bytes to record batches.

:data:`FORMATS` is the registry, in sniffing order: each entry says how to
recognise its format from the first 64 KB of a file (content first, the file
name only as a tie-breaker) and which function reads it. Adding a format is
one module and one :func:`register` call.

A reader has the signature ``read(chunks, ctx) -> Iterator[(table, RecordBatch)]``
where ``chunks`` is an iterable of decompressed bytes and ``ctx`` a
:class:`~pt2logs.readers.torch_trace.FileContext` (file name, rank hint,
stats to fill). Readers never open files, print, or touch DuckDB.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa

from pt2logs.readers.records import HEADER_RE
from pt2logs.readers.torch_trace import FileContext, read_trace

Reader = Callable[[Iterable[bytes], FileContext], Iterator[tuple[str, pa.RecordBatch]]]


@dataclass(frozen=True)
class Format:
    name: str
    description: str
    sniff: Callable[[bytes, str], bool]
    read: Reader
    #: auxiliary formats describe a run (stderr, counters) rather than make one
    auxiliary: bool = False


FORMATS: dict[str, Format] = {}


def register(fmt: Format) -> Format:
    FORMATS[fmt.name] = fmt
    return fmt


def _lines(head: bytes, n: int = 40) -> list[bytes]:
    # the last line of a head may be cut: ignore it unless it is the only one
    lines = head.split(b"\n", n)[:n]
    return [ln.rstrip(b"\r") for ln in lines if ln.strip()]


_RANK_PREFIX = re.compile(rb"^\[rank\d+\]:")


def sniff_trace(head: bytes, name: str) -> bool:
    """A TORCH_TRACE file: glog headers followed by a JSON object, payload lines with TABs.

    Most glog lines of the head must be JSON headers: a stderr capture where one log message
    happens to start with ``{`` is TORCH_LOGS text, not a trace."""
    json_headers = text_lines = 0
    for ln in _lines(head):
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


register(Format("torch_trace", "TORCH_TRACE structured trace (dedicated_log_torch_trace_*.log)", sniff_trace, read_trace))

# Spyre before any generic text format: a mixed capture must go to the reader that keeps Spyre lines
from pt2logs.readers.spyre import SPYRE_KERNEL_SPEC, SPYRE_LOG, SPYRE_TIMING  # noqa: E402  (needs Format)

register(SPYRE_LOG)
register(SPYRE_KERNEL_SPEC)
register(SPYRE_TIMING)


# Text formats (issue 6; docs/inputs.md): the specific ones first, TORCH_LOGS text (any glog text line) last
from pt2logs.readers.compile_debug import read_compile_debug, sniff_compile_debug  # noqa: E402
from pt2logs.readers.counters import (  # noqa: E402
    read_compile_times,
    read_counters_json,
    sniff_compile_times,
    sniff_counters_json,
)
from pt2logs.readers.tlparse_dir import read_tlparse_dir, sniff_tlparse_raw  # noqa: E402
from pt2logs.readers.torch_logs import read_torch_logs, sniff_torch_logs  # noqa: E402

register(Format("tlparse_dir", "tlparse output folder (raw.jsonl + payloads/ + chromium_events.json)", sniff_tlparse_raw, read_tlparse_dir))
register(Format("compile_debug", "TORCH_COMPILE_DEBUG graph folder file (output_code.py, fx_graph_*.py, ir_*_fusion.txt)",
                sniff_compile_debug, read_compile_debug, auxiliary=True))
register(Format("counters_json", "torch._dynamo counters dumped as JSON (+ compile_times text)", sniff_counters_json,
                read_counters_json, auxiliary=True))
register(Format("compile_times", "torch._dynamo.utils.compile_times() text", sniff_compile_times, read_compile_times, auxiliary=True))
register(Format("torch_logs", "TORCH_LOGS text: a stderr capture of torch's log lines", sniff_torch_logs, read_torch_logs, auxiliary=True))


def detect(head: bytes, name: str, only: str | None = None) -> Format | None:
    """The format of a file from its first bytes (and name); None when unknown."""
    if only is not None:
        return FORMATS[only]
    if not head.strip():
        return None
    for fmt in FORMATS.values():
        try:
            if fmt.sniff(head, name):
                return fmt
        except Exception:  # noqa: BLE001 - a sniffer must never break discovery
            continue
    return None

"""Readers: one module per input format, each a pure function from bytes to record batches.

What a format is lives in :mod:`pt2logs.readers.format` (``Format``: its facts), what its reader shares in
:mod:`pt2logs.readers.kit` (``FileContext``,
``ReadStats``, ``RowSink``, ``iter_lines``, composable line readers). :data:`ORDER` is the registry:
every format, in detection order — the first whose sniffer accepts a file's first 64 KB reads it. The
order is stated here, once: specific formats first, Spyre captures before TORCH_LOGS text (a capture
holding both is read by the Spyre format with both line readers), TORCH_LOGS text (any glog text
line), vLLM captures without it (vllm_log), then stderr captures without either (job_stderr). Adding a format is its module (its :class:`~pt2logs.readers.format.Format` states every fact about it) and one line in
:data:`ORDER`; everything else reads the facts from here (:func:`named`, :func:`switches`, :func:`layouts`, :func:`source_ranks`).
A text capture framed by a collector (Kubernetes, Docker, journald, log exports) or behind launcher
prefixes is sniffed by its unwrapped lines (:mod:`pt2logs.readers.lines.unwrapped`).
"""

from __future__ import annotations

from pt2logs.readers import spyre
from pt2logs.readers.documents import compile_debug, counters, run_record, tlparse_dir
from pt2logs.readers.format import CAPTURE, DOCUMENT, TRACE, Format, Layout
from pt2logs.readers.kit import FileContext, ReadStats
from pt2logs.readers.lines import job_stderr, torch_logs, vllm_log
from pt2logs.readers.lines.unwrapped import unwrap_head
from pt2logs.readers.trace import torch_trace

#: every format, in detection order
ORDER: tuple[Format, ...] = (
    torch_trace.FORMAT,
    spyre.SPYRE_LOG,
    spyre.SPYRE_KERNEL_SPEC,
    spyre.SPYRE_TIMING,
    spyre.SPYRE_FFDC,
    tlparse_dir.FORMAT,
    compile_debug.FORMAT,
    run_record.FORMAT,
    counters.COUNTERS_JSON,
    counters.COMPILE_TIMES,
    torch_logs.FORMAT,
    vllm_log.FORMAT,
    job_stderr.FORMAT,
)

FORMATS: dict[str, Format] = {f.name: f for f in ORDER}
#: the formats read line by line (kit.read_lines): behind the unwrapping layer, in detection order
LINE_FORMATS: tuple[Format, ...] = tuple(f for f in ORDER if f.lines)


def detect(head: bytes, name: str, only: str | None = None) -> Format | None:
    """The format of a file from its first bytes (and name); None when unknown."""
    if only is not None:
        return FORMATS[only]
    if not head.strip():
        return None
    fmt = _first(ORDER, head, name)
    if fmt is None or fmt.lines:
        # a text capture as a collector or launcher wrote it: its own lines decide (readers/lines/framing.py);
        # a framed file of foreign text is no format, whatever its framing looks like
        found, inner = unwrap_head(head)
        if found is not None and (found.framing is not None or fmt is None):
            return _first(LINE_FORMATS, inner, name)
    return fmt


def _first(formats: tuple[Format, ...], head: bytes, name: str) -> Format | None:
    for fmt in formats:
        try:
            if fmt.sniff(head, name):
                return fmt
        except Exception:  # noqa: BLE001 - a sniffer must never break discovery
            continue
    return None


def named(role: str) -> tuple[str, ...]:
    """The names of the formats of one role (:data:`TRACE`, :data:`CAPTURE`, :data:`DOCUMENT`), in detection order:
    e.g. the files the outcome rules read as stderr captures."""
    return tuple(f.name for f in ORDER if f.role == role)


def switches() -> dict[str, str]:
    """Format name -> what makes it be written (a switch, an environment variable), for the formats that say."""
    return {f.name: f.switch for f in ORDER if f.switch}


def layouts() -> list[tuple[Format, Layout]]:
    """The formats that say something about folder layouts, in detection order."""
    return [(f, f.layout) for f in ORDER if f.layout != Layout()]


def source_ranks() -> dict[str, tuple[str, int]]:
    """Ranked sources: ``source`` value -> (the format that yields it, its rank; 1 = best)."""
    return {
        f.source: (f.name, f.source_rank)
        for f in ORDER
        if f.source is not None and f.source_rank is not None
    }


__all__ = [
    "CAPTURE",
    "DOCUMENT",
    "FORMATS",
    "ORDER",
    "TRACE",
    "FileContext",
    "Format",
    "Layout",
    "ReadStats",
    "detect",
    "layouts",
    "named",
    "source_ranks",
    "switches",
]

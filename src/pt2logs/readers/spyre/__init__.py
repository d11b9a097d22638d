"""Torch-Spyre logs → ``transfers``, ``spyre_allocations``, ``spyre_layouts``, ``kernel_launches``,
``spyre_messages``; kernel specs (``sdsc_*.json``) → ``kernels``; TORCH_SPYRE_TIMING records → ``spyre_timing``;
FFDC failure reports (``TORCH_SPYRE_FFDC=1``) → ``spyre_failure_reports``.

Four line shapes (see docs/spyre.md), each optionally behind a vLLM ``(Worker pid=N) `` prefix:
legacy ``[ func ]  arg arg`` (C++ DEBUGINFO), unified logging ``[DEBUG] [spyre.runtime] <date> func: msg``
(C++), Python loggers ``[INFO] [spyre.x] msg`` and the deprecated SPYRE_INDUCTOR_LOG ``[INFO] [module] msg``; plus plain prints (``RUN: k dir``, ``Generating
path``), the debugging guide's illustrative ``[TORCH_SPYRE_DEBUG] copy_to_device: ...`` and
``DataConversionInfo: {`` JSON blocks. Messages are matched on their content with whitespace-tolerant
patterns (each shape spaces the same message differently). A transfer is assembled by a small state
machine (:class:`~pt2logs.readers.spyre.lines.SpyreLines`). Any other line goes to the TORCH_LOGS line
reader (:mod:`pt2logs.readers.lines.torch_logs`): torch's own lines in the same capture become
``recompiles`` / ``graph_breaks`` / ``log_lines`` rows, the rest foreign ``log_lines``.
"""

from __future__ import annotations

import re

from pt2logs.readers.format import CAPTURE, DOCUMENT, Format, Layout
from pt2logs.readers.kit import RowSink
from pt2logs.readers.lines.torch_logs import capture_chain
from pt2logs.readers.spyre.documents import read_kernel_spec, read_timing
from pt2logs.readers.spyre.dtypes import dtype_width, parse_layout, torch_dtype
from pt2logs.readers.spyre.ffdc import ffdc_anchor, read_ffdc, sniff_ffdc
from pt2logs.readers.spyre.lines import SpyreLines
from pt2logs.readers.spyre.patterns import INDUCTOR_MODULES


def _spyre_lines(sink: RowSink) -> SpyreLines:
    sink.batch_rows = min(sink.batch_rows, 4096)
    return SpyreLines(sink)


# ----------------------------------------------------------------------------- sniffers

_SNIFF_LEVELED = re.compile(
    rb"^(?:\([^()\n]*pid=\d+\) )?\[(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|TRACE)\] \[[\w.-]*spyre[\w.-]*\] ",
    re.M | re.I,
)
_SNIFF_LEGACY = re.compile(rb"^(?:\([^()\n]*pid=\d+\) )?\[ [A-Za-z_~][\w:~<>]* \]  \S", re.M)
_SNIFF_MODULE = re.compile(
    rb"^(?:\([^()\n]*pid=\d+\) )?\[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\] \[([A-Za-z_]\w*)\] ",
    re.M,
)
_SNIFF_OTHER = re.compile(
    rb"^(?:\[TORCH_SPYRE_DEBUG\] \w+:|RUN: sdsc_\S+ \S|Generating \S*(?:sdsc|inductor-spyre)\S*)",
    re.M,
)
_SNIFF_SPEC = re.compile(rb'^\s*\{\s*"\d+_[A-Za-z_]\w*"\s*:\s*\{')
_SPEC_KEYS = (
    b'"numCoresUsed_"',
    b'"dscs_"',
    b'"sdscFolds_"',
    b'"coreFoldProp_"',
    b'"sdscFoldProps_"',
)


def sniff_spyre_log(head: bytes, name: str) -> bool:
    """A Spyre log: a `[LEVEL] [spyre.x]`, `[TORCH_SPYRE_DEBUG]`, `RUN: sdsc_` or `Generating ...sdsc` line anywhere
    in the head, or legacy `[ func ]  ` lines (two of them, or one in a head that mentions Spyre), or
    a SPYRE_INDUCTOR_LOG `[LEVEL] [module] ` line of a torch_spyre/_inductor module."""
    head = head[: 64 << 10]
    if _SNIFF_LEVELED.search(head) or _SNIFF_OTHER.search(head):
        return True
    legacy = _SNIFF_LEGACY.findall(head, 0)
    if len(legacy) >= 2 or (len(legacy) == 1 and b"pyre" in head):
        return True
    # SPYRE_INDUCTOR_LOG: a line of a torch_spyre/_inductor module
    return any(m.decode() in INDUCTOR_MODULES for m in _SNIFF_MODULE.findall(head))


def sniff_kernel_spec(head: bytes, name: str) -> bool:
    """A kernel spec: a JSON object keyed `<idx>_<opfunc>` holding SuperDSC fields."""
    return bool(_SNIFF_SPEC.match(head[: 64 << 10])) and any(k in head for k in _SPEC_KEYS)


def sniff_timing(head: bytes, name: str) -> bool:
    """A TORCH_SPYRE_TIMING record: one JSON object with meta.recorder_version and events."""
    h = head[: 64 << 10].lstrip()
    return (
        h.startswith(b"{") and b'"recorder_version"' in h and (b'"events"' in h or b'"clock"' in h)
    )


#: a Spyre text capture → Spyre rows from its Spyre lines, TORCH_LOGS rows from torch's lines, foreign
#: ``log_lines`` for the rest; in batches
SPYRE_LOG = Format(
    "spyre_log",
    "torch-spyre debug log (TORCH_SPYRE_DEBUG=1, TORCH_LOGS=+torch_spyre), with any TORCH_LOGS lines",
    sniff_spyre_log,
    role=CAPTURE,
    lines=capture_chain(_spyre_lines),
    source="spyre",
    switch="TORCH_SPYRE_DEBUG=1 or TORCH_LOGS=+torch_spyre",
)
read_spyre_log = SPYRE_LOG.read
SPYRE_KERNEL_SPEC = Format(
    "spyre_kernel_spec",
    "torch-spyre kernel spec (sdsc_<N>.json, sdsc.json)",
    sniff_kernel_spec,
    read_kernel_spec,
    role=DOCUMENT,
    auxiliary=True,
    source="spyre",
    switch="torch-spyre kernel specs (sdsc json) kept",
)
SPYRE_TIMING = Format(
    "spyre_timing",
    "TORCH_SPYRE_TIMING record (rec.<pid>.json)",
    sniff_timing,
    read_timing,
    role=DOCUMENT,
    auxiliary=True,
    source="spyre",
    switch="TORCH_SPYRE_TIMING=1",
)
#: (its switch, TORCH_SPYRE_FFDC=1, is not listed among a bug report's switches: the report has its own section)
SPYRE_FFDC = Format(
    "spyre_ffdc",
    "torch-spyre FFDC failure report (TORCH_SPYRE_FFDC=1: ffdc_reports/ffdc_<category>_<time>_<pid>.json)",
    sniff_ffdc,
    read_ffdc,
    role=DOCUMENT,
    auxiliary=True,
    source="spyre",
    layout=Layout(anchor=ffdc_anchor),
)

__all__ = [
    "SPYRE_FFDC",
    "SPYRE_KERNEL_SPEC",
    "SPYRE_LOG",
    "SPYRE_TIMING",
    "dtype_width",
    "parse_layout",
    "read_kernel_spec",
    "read_spyre_log",
    "read_timing",
    "sniff_kernel_spec",
    "sniff_spyre_log",
    "sniff_timing",
    "torch_dtype",
]

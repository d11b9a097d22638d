"""A job's stderr without TORCH_LOGS text: the lines that say how its processes ended.

A stderr capture with torch's glog lines is the ``torch_logs`` format (read with the same line readers:
:class:`~pt2logs.readers.lines.outcome_lines.OutcomeLines` then :class:`~pt2logs.readers.lines.torch_logs.LogLines`).
This format catches the captures that have none in their first 64 KB but do hold what a failed
distributed job prints: ``[rankN]:`` tracebacks (torch's excepthook), NCCL's C++ log lines, the
elastic agent's ``ChildFailedError``, a watchdog timeout; or a plain Python traceback in a file named
like a capture (``stderr``, ``.err``, ``.log``, ``.out``, ``.txt``). It comes last in detection order.
Every line is kept as a ``log_lines`` row (foreign, as in any capture) and the evidence goes to
``outcome_evidence``.
"""

from __future__ import annotations

import re

from pt2logs.readers.format import CAPTURE, Format
from pt2logs.readers.lines.torch_logs import capture_chain

_STRONG = re.compile(
    rb"^(?:\[rank\d+\]:\s?Traceback \(most recent call last\):"
    rb"|(?:\[rank\d+\]:)?\[[EWF](?:\d{4} \d\d:\d\d:\d\d\.\d+)? *ProcessGroup\w+\.cpp:\d+\]"
    rb"|.*Watchdog caught collective operation timeout"
    rb"|torch\.distributed\.elastic\.multiprocessing\.errors\.ChildFailedError"
    rb"|.*Sending process \d+ closing signal SIG"
    rb"|.*failed \(exitcode: -?\d+\) local_rank: \d+)",
    re.M,
)
_TRACEBACK = re.compile(rb"^Traceback \(most recent call last\):\s*$", re.M)
_CAPTURE_NAME = re.compile(r"(?i)(?:std)?err|\.out$|\.log$|\.txt$|stdout|output")


def sniff_job_stderr(head: bytes, name: str) -> bool:
    """Text (no NUL bytes) holding a distributed job's failure lines anywhere in its head, or a Python
    traceback in a file named like a stderr capture."""
    if b"\0" in head[:4096] or head.lstrip()[:1] in (b"{", b"["):
        return False
    if _STRONG.search(head):
        return True
    return bool(_CAPTURE_NAME.search(name)) and _TRACEBACK.search(head) is not None


FORMAT = Format(
    "job_stderr",
    "a job's stderr without TORCH_LOGS lines: tracebacks, NCCL and torchrun failure lines",
    sniff_job_stderr,
    role=CAPTURE,
    lines=capture_chain(),
    auxiliary=True,
)

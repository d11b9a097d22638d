"""A vLLM capture (``vllm serve`` / an ``LLM(...)`` script's stdout or stderr) → ``vllm_log_events``, plus
``log_lines`` for every line and TORCH_LOGS rows for torch's own lines in it.

vLLM's logger writes to stdout by default (vllm/logger.py ``VLLM_LOGGING_STREAM``); its lines
(``INFO 08-12 03:18:23 [backends.py:519] Dynamo bytecode transform time: 6.94 s``, see
:mod:`pt2logs.readers.lines.vllm_patterns`) are not glog lines, so a capture with no TORCH_LOGS line in its head
is this format. One that has them is ``torch_logs``, read with the same chain of line readers
(:class:`~pt2logs.readers.lines.vllm_lines.VllmLines` is in both): either way nothing is lost. It comes after
``torch_logs`` and before ``job_stderr`` in detection order.
"""

from __future__ import annotations

import re

from pt2logs.readers.format import CAPTURE, Format
from pt2logs.readers.lines.torch_logs import capture_chain

#: a vLLM logger line: optional prefixes and colours, LEVEL MM-DD HH:MM:SS [file.py:N] (brackets from 0.8)
_SNIFF = re.compile(
    rb"^(?:[^\n]{0,160}?[ )m])?(?:\x1b\[[0-9;]*m)?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)(?:\x1b\[[0-9;]*m)? "
    rb"(?:\x1b\[[0-9;]*m)?\d\d-\d\d \d\d:\d\d:\d\d(?:\x1b\[[0-9;]*m)? (?:\x1b\[[0-9;]*m)?\[?[\w./-]+\.py:\d+\] ",
    re.M,
)

#: vLLM's loggers under another program's format (vllm_patterns.OTHER): a date, the logger's name and the level
_SNIFF_OTHER = re.compile(
    rb"^(?:[^\n]{0,160}?[ )])?\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?\]?\s*(?:[-|:]\s*)?vllm(?:\.\w+)*(?:\s*[-|:]\s*\d+)?"
    rb"\s*[-|:]\s*\[?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\]?\s*[-|:]|^\[?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\]?:vllm(?:\.\w+)*:",
    re.M,
)


def sniff_vllm_log(head: bytes, name: str) -> bool:
    """Two vLLM logger lines in the head (one is enough when it names vLLM or its compile cache); vLLM's
    loggers under another format count too."""
    n = 0
    for _ in _SNIFF.finditer(head):
        n += 1
        if n >= 2:
            return True
    if n == 1 and (b"vllm" in head.lower() or b"torch.compile" in head):
        return True
    return _SNIFF_OTHER.search(head) is not None


FORMAT = Format(
    "vllm_log",
    "vLLM's log output (stdout/stderr of vllm serve or an LLM script), with any TORCH_LOGS lines",
    sniff_vllm_log,
    role=CAPTURE,
    lines=capture_chain(),
    auxiliary=True,
)
read_vllm_log = FORMAT.read

"""The shapes of torch's log lines, for the TORCH_LOGS line reader (:mod:`pt2logs.readers.lines.torch_logs`)
and its sniffer: the glog prefix (torch 2.1+), the torch 2.0-2.3 form, a glog line behind another
program's prefix or glued to other output, the compile id in a prefix, and one open message.
"""

from __future__ import annotations

import re
from typing import Any

GLOG = re.compile(
    r"(?:\[rank(?P<rank>\d+)\]:)?(?P<level>[VIWEC])(?P<mmdd>\d{4}) (?P<time>\S+) +(?P<pid>\d+) "
    r"(?P<path>.+?):(?P<lineno>\d+)\](?: \[(?P<trace_id>!?\d+(?:/\d+){0,2}(?:_\d+)?)\])?"
    r"(?: \[__(?P<artifact>\w+)\])?(?: (?P<msg>.*))?$"
)
#: torch 2.0-2.3: ``[rank0]:[2023-08-23 20:16:32,833] [12/21] torch._dynamo.x.__graph_breaks: [DEBUG] msg``
#: (rank and compile id only when known); 2.1-2.3 repeat the whole prefix on every line of a message
OLD = re.compile(
    r"(?:\[rank(?P<rank>\d+)\]:)?\[(?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d),(?P<ms>\d{3})\]"
    r"(?: \[(?P<trace_id>!?\d+(?:/\d+){0,2}(?:_\d+)?)\])? (?P<logger>[\w.]+): "
    r"\[(?P<levelname>DEBUG|INFO|WARNING|ERROR|CRITICAL)\] ?(?P<msg>.*)$"
)
EMBEDDED = re.compile(r"\[rank\d+\]:[VIWEC]\d{4} \d\d:\d\d:\d\d")
#: a glog line behind another program's own prefix: ``[2025-08-12 03:18:23.088] V0812 ...`` or ``(Worker pid=7) V0812 ...``
WRAPPED = re.compile(r"^(?:\[[^\]\n]{1,64}\]|\([^)\n]{1,64}\))[ :]*(?=(?:\[rank\d+\]:)?[VIWEC]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ )")
LEVELS = {"DEBUG": "V", "INFO": "I", "WARNING": "W", "ERROR": "E", "CRITICAL": "C"}


def split_compile_id(trace_id: str | None) -> tuple[str | None, int | None]:
    """``0/1_2`` -> (``0/1``, 2); ``!0/1/2`` -> (``!0/1/2``, 0); None -> (None, None)."""
    if not trace_id:
        return None, None
    cid, _, att = trace_id.partition("_")
    return cid, int(att) if att else 0


class Message:
    """One message being read: a log line and the lines of its prefix that follow."""


    __slots__ = ("line_no", "n_lines", "prefix", "rank", "level", "pid", "path", "lineno",
                 "cid", "attempt", "artifact", "parts", "nbytes", "ts", "carried")

    def __init__(self, line_no: int, prefix: str, rank: int | None, level: str, pid: int | None, path: str | None,
                 lineno: int | None, cid: str | None, attempt: int | None, artifact: str | None, msg: str):
        self.line_no = line_no
        self.n_lines = 1
        self.prefix = prefix
        self.rank = rank
        self.level = level
        self.pid = pid
        self.path = path
        self.lineno = lineno
        self.cid = cid
        self.attempt = attempt
        self.artifact = artifact
        self.parts = [msg]
        self.nbytes = len(msg)
        self.ts: int | None = None
        self.carried: Any = None  # what the first line's collector framing and launcher prefixes said

    @property
    def text(self) -> str:
        return "\n".join(self.parts)


_SNIFF_TEXT = re.compile(
    rb"^(?:\[[^\]\n]{1,64}\][ :]*|\([^)\n]{1,64}\)[ :]*)?(?:\[rank\d+\]:)?[VIWEC]\d{4} \d\d:\d\d:\d\d\.\d{1,6} +\d+ [^\]\n]+:\d+\](?P<json> \{)?", re.M)
_SNIFF_OLD = re.compile(rb"^(?:\[rank\d+\]:)?\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\](?: \[!?[\d/_]+\])? torch\.[\w.]+: "
                        rb"\[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\] ", re.M)


def sniff_torch_logs(head: bytes, name: str) -> bool:
    """TORCH_LOGS text: glog lines whose message is text (a TORCH_TRACE header's is a JSON object),
    anywhere in the head (stderr often starts with warnings or prints). Captures that also hold
    Spyre lines are recognised by the Spyre format first (it comes earlier in the registry) and read
    with both line readers."""
    text = trace_like = 0
    for m in _SNIFF_TEXT.finditer(head):
        if m.group("json"):
            trace_like += 1
        else:
            text += 1
    if text == 0:
        text = len(_SNIFF_OLD.findall(head))
    return text > 0 and text >= trace_like

"""torch's log line prefixes and what the TORCH_LOGS reader holds of one message; the format's sniffer.

The shapes (each tested in tests/readers/test_torch_logs.py and test_torch_shapes.py): torch's glog
prefix (``[rank1]:V1122 09:44:21.382000 14352 torch/_dynamo/guards.py:5396] [0/1] [__recompiles] ``), torch
2.0-2.3's ``[rank0]:[2023-08-23 20:16:32,833] [12/21] torch._dynamo.x.__graph_breaks: [DEBUG] ``, a glog line
behind another program's prefix, and the reshaped ones of :mod:`.torch_shapes`.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from pt2logs.readers.lines import torch_shapes
from pt2logs.readers.timebase import time_of_day_us as _tod

#: the longest message (or foreign block) held: a longer one is cut into several rows (``message_too_long``)
MAX_MESSAGE_BYTES = 16 << 20
#: the largest rank read from a log (a larger number is damage, not a rank)
MAX_RANK = 1 << 20

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
WRAPPED = re.compile(
    r"^(?:\[[^\]\n]{1,64}\]|\([^)\n]{1,64}\))[ :]*(?=(?:\[rank\d+\]:)?[VIWEC]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ )"
)
EPOCH = date(1970, 1, 1).toordinal()
LEVELS = {"DEBUG": "V", "INFO": "I", "WARNING": "W", "ERROR": "E", "CRITICAL": "C"}


# ----------------------------------------------------------------------------- lines


def split_compile_id(trace_id: str | None) -> tuple[str | None, int | None]:
    """``0/1_2`` -> (``0/1``, 2); ``!0/1/2`` -> (``!0/1/2``, 0); None -> (None, None)."""
    if not trace_id:
        return None, None
    cid, _, att = trace_id.partition("_")
    return cid, int(att) if att else 0


class Msg:
    """One open message: its first line, prefix, what the prefix says, its lines."""

    __slots__ = (
        "line_no",
        "n_lines",
        "prefix",
        "rank",
        "level",
        "pid",
        "path",
        "lineno",
        "cid",
        "attempt",
        "artifact",
        "parts",
        "nbytes",
        "ts",
        "continues",
        "carried",
    )

    def __init__(
        self,
        line_no: int,
        prefix: str,
        rank: int | None,
        level: str,
        pid: int | None,
        path: str | None,
        lineno: int | None,
        cid: str | None,
        attempt: int | None,
        artifact: str | None,
        msg: str,
    ):
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
        self.carried: Any = (
            None  # what the first line's collector framing and launcher prefixes said
        )
        #: (``continues``, set for the messages that are not glog's, the only ones read for it: any line that is no
        #: log line continues it, for a reshaped message of a multi-line kind whose prefix is on its first line only)

    @property
    def text(self) -> str:
        return "\n".join(self.parts)


class OtherPrefixes:
    """The messages of :class:`~pt2logs.readers.lines.torch_logs.LogLines` that have no glog prefix (a mixin:
    ``self.old`` is the one such message open, ``close_old`` closes it)."""

    old: Msg | None

    def old_line(self, line_no: int, text: str, o: re.Match) -> None:
        prefix = text[: o.start("msg")].rstrip()
        cur = self.old
        if cur is not None and cur.prefix == prefix and cur.nbytes < MAX_MESSAGE_BYTES:
            # torch 2.1-2.3 repeat the prefix on every line of one message
            msg = o.group("msg")
            cur.parts.append(msg)
            cur.n_lines += 1
            cur.nbytes += len(msg) + 1
            return
        self.close_old()
        logger = o.group("logger")
        art = logger.rsplit(".", 1)[-1]
        rank = (
            int(o.group("rank")) if o.group("rank") is not None else self._rank(self.sink.carried)
        )
        if rank is not None and rank >= MAX_RANK:
            self.error(
                "bad_value",
                line_no,
                f"[rank{o.group('rank')[:40]}] is not a rank; read as no rank, line kept",
            )
            rank = None
        elif rank is not None:
            self.stats.ranks.add(rank)
        cid, attempt = split_compile_id(o.group("trace_id"))
        new = Msg(
            line_no,
            prefix,
            rank,
            LEVELS[o.group("levelname")],
            None,
            logger,
            None,
            cid,
            attempt,
            art[2:] if art.startswith("__") else None,
            o.group("msg"),
        )
        new.carried = self.sink.carried
        try:
            d = date.fromisoformat(o.group("date"))
            tod = _tod(f"{o.group('time')}.{o.group('ms')}")
            new.ts = (d.toordinal() - EPOCH) * 86_400_000_000 + (tod or 0)
        except ValueError:
            self.error(
                "bad_timestamp",
                line_no,
                "impossible date in the log prefix; message kept without ts",
            )
        new.continues = False
        self.old = (
            new  # ends at a line that is neither an indented continuation nor of the same prefix
        )

    def shaped_line(self, line_no: int, s: torch_shapes.Shaped) -> None:
        """A torch message under another prefix, or with torch's prefix cut (:mod:`.torch_shapes`)."""
        cur = self.old
        if (
            cur is not None
            and not s.continues
            and cur.prefix == s.prefix
            and cur.nbytes < MAX_MESSAGE_BYTES
        ):
            cur.parts.append(s.msg)  # the prefix repeated on every line of one message
            cur.n_lines += 1
            cur.nbytes += len(s.msg) + 1
            return
        self.close_old()
        cid, attempt = split_compile_id(s.trace_id)
        new = Msg(
            line_no,
            s.prefix,
            self._rank(self.sink.carried),
            s.level or "V",
            None,
            s.path,
            s.lineno,
            cid,
            attempt,
            s.artifact,
            s.msg,
        )
        new.carried = self.sink.carried
        new.continues = s.continues and torch_shapes.multi_line(s.artifact)
        if s.date:
            try:
                d = date.fromisoformat(s.date)
                new.ts = (d.toordinal() - EPOCH) * 86_400_000_000 + (_tod(s.time) or 0)
            except ValueError:
                self.error(
                    "bad_timestamp",
                    line_no,
                    "impossible date in the log prefix; message kept without ts",
                )
        self.old = new


_SNIFF_TEXT = re.compile(
    rb"^(?:\[[^\]\n]{1,64}\][ :]*|\([^)\n]{1,64}\)[ :]*)?(?:\[rank\d+\]:)?[VIWEC]\d{4} \d\d:\d\d:\d\d\.\d{1,6} +\d+ [^\]\n]+:\d+\](?P<json> \{)?",
    re.M,
)
_SNIFF_OLD = re.compile(
    rb"^(?:\[rank\d+\]:)?\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\](?: \[!?[\d/_]+\])? torch\.[\w.]+: "
    rb"\[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\] ",
    re.M,
)


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
        text = len(_SNIFF_OLD.findall(head)) or len(torch_shapes.SNIFF.findall(head))
    return text > 0 and text >= trace_like

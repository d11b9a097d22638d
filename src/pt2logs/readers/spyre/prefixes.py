"""The prefixes of Spyre log lines (see docs/spyre.md), each optionally behind a vLLM ``(Worker pid=N) ``
prefix: legacy ``[ func ]  args``, unified logging ``[LEVEL] [component] <date> func: msg``, Python loggers
``[LEVEL] [spyre.x] msg``, SPYRE_INDUCTOR_LOG ``[LEVEL] [module] msg``, the illustrative format, plain prints.
"""

from __future__ import annotations

import calendar
import re
from typing import Any

from pt2logs.readers.spyre import patterns as P
from pt2logs.readers.spyre.dtypes import int64


class Prefixes:
    """Reads the prefix of one line after another (a unified-logging date is converted once per second)."""

    def __init__(self) -> None:
        self._date: tuple[str, int | None] = ("", None)

    def parse(self, text: str, carried: Any = None) -> tuple | None:
        """(shape, level, component, func, ts, worker, pid, message) of a Spyre line, else None; ``carried``:
        what the unwrapping layer took off the line (:class:`~pt2logs.readers.lines.carried.Carried`)."""
        worker = pid = None
        body = text
        if text.startswith("(") and (m := P.WORKER.match(text)):
            worker, pid, body = m.group(1) or None, int(m.group(2)), text[m.end() :]
        elif carried is not None:  # a prefix the unwrapping layer took off
            worker, pid = carried.worker, carried.pid
        c = body[:1]
        if c == "[":
            if m := P.LEGACY.match(body):
                return ("legacy", None, None, m.group(1), None, worker, pid, m.group(2).strip())
            if m := P.LEVELED.match(body):
                level, comp, msg = m.group(1).upper(), m.group(2), m.group(3)
                if d := P.DATE.match(msg):
                    f = P.CFUNC.match(d.group(8))
                    func, msg = (f.group(1), f.group(2)) if f else (None, d.group(8))
                    return ("unified", level, comp, func, self._ts(d), worker, pid, msg.strip())
                return ("python", level, comp, None, None, worker, pid, msg.strip())
            if (m := P.MODULE_LEVELED.match(body)) and m.group(2) in P.INDUCTOR_MODULES:
                return (
                    "module",
                    m.group(1),
                    m.group(2),
                    None,
                    None,
                    worker,
                    pid,
                    m.group(3).strip(),
                )
            if m := P.ILLUS.match(body):
                return (
                    "illustrative",
                    None,
                    None,
                    m.group(1),
                    None,
                    worker,
                    pid,
                    m.group(2).strip(),
                )
        elif (c == "R" and P.RUN.match(body)) or (c == "G" and P.GENERATING.match(body)):
            return ("print", None, None, None, None, worker, pid, body.strip())
        return None

    def _ts(self, d: re.Match) -> int | None:
        """Epoch µs of a unified-logging date, read as UTC (the log does not say its zone)."""
        if self._date[0] != d.group(0)[:19]:
            try:
                us = (
                    calendar.timegm(tuple(int(d.group(i)) for i in range(1, 7)) + (0, 0, 0))
                    * 1_000_000
                )
            except (ValueError, OverflowError):
                us = None
            self._date = (d.group(0)[:19], us)
        base, frac = self._date[1], d.group(7)
        return int64(base + (int(frac.ljust(6, "0")) if frac else 0)) if base is not None else None

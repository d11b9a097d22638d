"""vLLM's log lines in a capture → ``vllm_log_events``.

:class:`VllmLines` is a line reader of the kit (:func:`~pt2logs.readers.kit.read_lines`) chained before
:class:`~pt2logs.readers.lines.torch_logs.LogLines` in every stderr/stdout capture (``torch_logs``, ``vllm_log``,
``job_stderr``, ``spyre_log``, the stderr a ``pt2logs_run.json`` reads). Like the outcome reader it takes no
line (``take`` returns False): every line still becomes a ``log_lines`` row (vLLM's are foreign to
torch's format), so nothing is lost and a capture that mixes vLLM, TORCH_LOGS and Spyre lines is read by
each reader that knows them. The lines it knows (the prefix and messages in
:mod:`pt2logs.readers.lines.vllm_patterns`, each cited to the vLLM source that prints it) also become
``vllm_log_events`` rows.

Rules:

* ANSI colour codes are removed first; a Ray `` [repeated Nx across cluster]`` suffix is taken off and N kept as
  ``repeat`` (the unwrapping layer, :mod:`.framing`, takes it off first when the capture carries Ray's prefixes).
* A process prefix the unwrapping layer took off (``sink.carried``) names the process when the line has none.
* The process is the last ``(name pid=N)`` group before the logger's part; the rank is ``rank=N`` in
  it (``VllmWorker rank=0``), else the ``rank_<r>_<dp>`` folder of the cache directory the same pid named,
  else the file's own rank.
* Time: ``%m-%d %H:%M:%S`` has no year and is local time; as for TORCH_LOGS text, the year is the file's
  mtime year (the year before when the date is after the mtime), the local time is taken as UTC.
"""

from __future__ import annotations

import re
from typing import Any

from pt2logs.readers.kit import RowSink
from pt2logs.readers.lines import vllm_patterns as P
from pt2logs.readers.timebase import TimeBase

_CACHE_RANK = re.compile(r"/rank_(\d{1,7})_\d{1,7}(?:/|$)")
MAX_MESSAGE = 64 << 10


def _num(v: str | None) -> float | str | None:
    """A number as printed; one no float column holds (``inf``, ``nan``, ``1e999``, 400 digits) is left as
    its text, which the column's rule stores as NULL and reports (``bad_value`` at its line, the text kept)."""
    if v is None:
        return None
    try:
        f = float(v)
    except ValueError:
        return v
    return f if abs(f) < float("inf") else v


class VllmLines:
    """The vLLM line reader (:class:`~pt2logs.readers.kit.LineReader`); it never takes a line."""

    def __init__(self, sink: RowSink):
        self.sink = sink
        self.ctx = sink.ctx
        self.kinds = sink.stats.kinds
        self.tb = TimeBase(self.ctx.mtime)
        self.pid_rank: dict[int, int] = {}

    def take(self, line_no: int, text: str) -> bool:
        if P.QUICK(text) is None:
            return False  # one scan: most lines of a capture are not vLLM logger lines
        if "\x1b" in text:
            text = P.ANSI.sub("", text)
        m = P.LINE.search(text)
        if m is None:
            return False
        msg = m.group("msg").rstrip()
        repeat = None
        if (r := P.RAY_REPEAT.search(msg)) is not None:
            repeat, msg = int(r.group("repeat")), msg[: r.start()]
        if not msg.startswith(P.STARTS) and not (msg[:1] == "[" and P.TAG.match(msg)):
            return False
        tag = None
        if (t := P.TAG.match(msg)) is not None:
            tag, msg = t.group("tag"), msg[t.end():]
        for kind, pat in P.MESSAGES:
            g = pat.match(msg)
            if g is not None:
                self._row(line_no, text[: m.start()], m, tag, kind, g, msg, repeat)
                break
        return False

    def finish(self) -> None:
        pass

    def _row(self, line_no: int, before: str, m: re.Match, tag: str | None, kind: str, g: re.Match, msg: str,
             repeat: int | None) -> None:
        procs = list(P.PROCESS.finditer(before))
        name = pid = rank = None
        c = self.sink.carried  # the prefixes the unwrapping layer took off, Ray's repeat count
        if procs:
            p = procs[-1]
            name, pid = p.group("name").strip() or None, int(p.group("pid"))
        elif c is not None:
            name, pid, rank = c.worker, c.pid, c.rank
        if name and (r := P.WORKER_RANK.search(name)):
            rank = int(r.group(1))
        if c is not None and repeat is None:
            repeat = c.repeat
        gd = g.groupdict()
        path = gd.get("path")
        if kind == "cache_dir" and path and (c := _CACHE_RANK.search(path)) and pid is not None:
            self.pid_rank.setdefault(pid, int(c.group(1)))
        if rank is None and pid is not None:
            rank = self.pid_rank.get(pid)
        if rank is None:
            rank = self.ctx.rank
        if rank is not None:
            self.sink.stats.ranks.add(rank)
        what = gd.get("what")
        start = end = None
        if gd.get("range"):
            start, end = (int(x) for x in gd["range"].strip("()").split(","))
        elif gd.get("shape") and gd["shape"].lstrip("-").isdigit():
            start = end = int(gd["shape"])
        dynamic = None
        if what:  # 0.7.x - 0.9.x print the general shape as `shape None` (str(None))
            dynamic = what in ("general shape", "dynamic shape", "dynamic compile range", "shape None")
        model = gd.get("model")
        if model and model[:1] in "'\"":
            model = model[1:-1]
        self.kinds[f"vllm_{kind}"] = self.kinds.get(f"vllm_{kind}", 0) + 1
        self.sink.stats.events += 1
        self.sink.add("vllm_log_events", {
            "file": self.ctx.file, "line_no": line_no, "rank": rank, "ts": self._ts(m, line_no), "process": name, "pid": pid,
            "level": m.group("level"), "logger_file": m.group("file"), "logger_line": int(m.group("lineno")), "tag": tag,
            "kind": kind, "compile_range": what, "range_start": start, "range_end": end,
            "dynamic": dynamic,
            "seconds": _num(gd.get("s")), "gib": _num(gd.get("gib")), "path": path, "model": model,
            "vllm_version": gd.get("version"), "message": msg[:MAX_MESSAGE], "repeat": repeat})

    def _ts(self, m: re.Match, line_no: int) -> int | None:
        tb = self.tb
        mmdd = int(m.group("mm")) * 100 + int(m.group("dd"))
        tb.fallback_from_mtime(mmdd, self.ctx.mtime)
        hh, mi, ss = (int(x) for x in m.group("time").split(":"))
        ts: Any = None
        if hh < 24 and mi < 60 and ss <= 60:
            ts = tb.to_utc(tb.key(mmdd), ((hh * 60 + mi) * 60 + ss) * 1_000_000)
        if ts is None:
            self.sink.warn("bad_timestamp", line_no, "the vLLM prefix has an impossible date or time; row kept without ts")
        return ts

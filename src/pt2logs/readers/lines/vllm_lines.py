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
from datetime import date
from typing import Any

from pt2logs.readers.kit import RowSink
from pt2logs.readers.lines import vllm_patterns as P
from pt2logs.readers.timebase import TimeBase

_CACHE_RANK = re.compile(r"/rank_(\d{1,7})_\d{1,7}(?:/|$)")
MAX_MESSAGE = 64 << 10
_EPOCH = date(1970, 1, 1).toordinal()
#: how a line of vLLM's loggers under another format starts: a date, ``[date``, a level first, a process prefix
#: (torch's glog lines, most of a TORCH_LOGS capture, are passed over before: _GLOG_FIRST)
_OTHER_FIRST = frozenset("0123456789[(DIWEC")
#: the first letter of torch's glog prefix (``V1126 17:36:29.939000 …``: a letter, then the month and day)
_GLOG_FIRST = frozenset("VIWEC")


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
        #: each process's cache load that logged no time (vLLM 0.6.6 - 0.7.x), until its next line
        self.held: dict[tuple[str | None, int | None], dict[str, Any]] = {}

    def take(self, line_no: int, text: str) -> bool:
        first = text[:1]
        if first in _GLOG_FIRST and text[1:5].isdigit():
            return False  # torch's glog line (most of a TORCH_LOGS capture): never a vLLM logger's
        if P.QUICK(text) is None and ("vllm" not in text or first not in _OTHER_FIRST):
            return False  # one scan: most other lines of a capture are not vLLM logger lines
        if "\x1b" in text:
            text = P.ANSI.sub("", text)
        m = P.LINE.search(text)
        if m is not None:
            f = m.groupdict()
        elif (m := P.OTHER.search(text)) is not None and (
            m.start() == 0 or text[: m.start()].rstrip().endswith(")")
        ):
            f = m.groupdict()  # vLLM's logger under a format of another program's
            f["level"], f["file"] = f["level"] or f["level2"], f["file"] or f["file2"]
        else:
            return False
        msg = m.group("msg").rstrip()
        repeat = None
        if (r := P.RAY_REPEAT.search(msg)) is not None:
            repeat, msg = int(r.group("repeat")), msg[: r.start()]
        if not msg.startswith(P.STARTS) and not (msg[:1] == "[" and P.TAG.match(msg)):
            return False
        tag = None
        if (t := P.TAG.match(msg)) is not None:
            tag, msg = t.group("tag"), msg[t.end() :]
        for kind, pat in P.MESSAGES:
            g = pat.match(msg)
            if g is not None:
                self._row(line_no, text[: m.start()], f, tag, kind, g, msg, repeat)
                break
        return False

    def finish(self) -> None:
        for row in self.held.values():
            self.sink.add("vllm_log_events", row)
        self.held.clear()

    def _row(
        self,
        line_no: int,
        before: str,
        f: dict,
        tag: str | None,
        kind: str,
        g: re.Match,
        msg: str,
        repeat: int | None,
    ) -> None:
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
        if path and (c := _CACHE_RANK.search(path)):
            if pid is not None and kind == "cache_dir":
                self.pid_rank.setdefault(pid, int(c.group(1)))
            if rank is None and kind.startswith("aot_"):
                rank = int(
                    c.group(1)
                )  # the AOT artifact's folder names the rank it was compiled for
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
            dynamic = what in (
                "general shape",
                "dynamic shape",
                "dynamic compile range",
                "shape None",
            )
        model = gd.get("model")
        if model and model[:1] in "'\"":
            model = model[1:-1]
        row = {
            "file": self.ctx.file,
            "line_no": line_no,
            "rank": rank,
            "ts": self._ts(f, line_no),
            "process": name,
            "pid": pid,
            "level": f["level"],
            "logger_file": f["file"],
            "logger_line": int(f["lineno"]) if f.get("lineno") else None,
            "tag": tag,
            "kind": kind,
            "compile_range": what,
            "range_start": start,
            "range_end": end,
            "dynamic": dynamic,
            "seconds": _num(gd.get("s")),
            "gib": _num(gd.get("gib")),
            "path": path,
            "model": model,
            "vllm_version": gd.get("version"),
            "reason": gd.get("reason"),
            "compile_seconds": _num(gd.get("cs")),
            "message": msg[:MAX_MESSAGE],
            "repeat": repeat,
        }
        self.sink.stats.events += 1
        held = self.held.pop((name, pid), None)
        if held is not None:
            if (
                kind == "compile_range"
                and row["seconds"] is not None
                and (held["dynamic"], held["range_start"]) == (dynamic, start)
            ):
                # vLLM 0.6.6 - 0.7.x time the load with the compile's words: the load's time, not a compile
                held["seconds"] = row["seconds"]
                held["message"] = (held["message"] + "\n" + row["message"])[:MAX_MESSAGE]
                self.sink.add("vllm_log_events", held)
                return
            self.sink.add("vllm_log_events", held)
        self.kinds[f"vllm_{kind}"] = self.kinds.get(f"vllm_{kind}", 0) + 1
        if kind == "cache_load" and row["seconds"] is None and len(self.held) < 10_000:
            self.held[(name, pid)] = row  # 0.6.6 - 0.7.x: its time may follow, in a compile's words
            return
        self.sink.add("vllm_log_events", row)

    def _ts(self, f: dict, line_no: int) -> int | None:
        if not f.get("time"):
            return None
        tb = self.tb
        mmdd = int(f["mm"]) * 100 + int(f["dd"])
        tb.fallback_from_mtime(mmdd, self.ctx.mtime)
        hh, mi, ss = (int(x) for x in f["time"].split(":"))
        ts: Any = None
        if f.get("year") and hh < 24 and mi < 60 and ss <= 60:
            try:
                ts = (
                    date(int(f["year"]), int(f["mm"]), int(f["dd"])).toordinal() - _EPOCH
                ) * 86_400_000_000 + ((hh * 60 + mi) * 60 + ss) * 1_000_000
            except ValueError:
                ts = None
        elif hh < 24 and mi < 60 and ss <= 60:
            ts = tb.to_utc(tb.key(mmdd), ((hh * 60 + mi) * 60 + ss) * 1_000_000)
        if ts is None:
            self.sink.warn(
                "bad_timestamp",
                line_no,
                "the vLLM prefix has an impossible date or time; row kept without ts",
            )
        return ts

"""How processes ended, from a job's stderr: ``outcome_evidence`` rows.

:class:`OutcomeLines` is a line reader of the kit (:func:`~pt2logs.readers.kit.read_lines`) chained
*before* :class:`~pt2logs.readers.lines.torch_logs.LogLines`: it looks at every line, records the lines that
say how a process ended (patterns and their sources: :mod:`pt2logs.readers.lines.outcome_patterns`) and
takes none of them (``take`` returns False), so every line still becomes a ``log_lines`` row as before.

Rules, each tested:

* torchrun's ``--tee`` header (``[default0]:``) gives ``local_rank`` and is stripped first.
* A line's rank comes from its ``[rankN]:`` prefix, else from NCCL's ``[Rank N]`` in the message,
  else from its pid (another line of the file that ties that pid to a rank: a ``[rankN]:`` glog line,
  an entry of ``ChildFailedError``'s table), else from the file's own rank; rows wait for the end of
  the file so a pid named before its table entry still finds its rank. ``rank_from`` says which.
* A traceback is one row, at its exception line (a traceback inside a glog message is an exception
  that was logged, not the end of a process: it is not evidence), with the innermost frame as ``location``; lines of
  several ranks interleave, so each rank (prefix) has its own open traceback. An exception line that
  is itself evidence (a gloo timeout, a closed connection, CUDA out of memory) takes that kind.
* ``ChildFailedError``'s table gives one ``child_failure`` row per entry (rank, local rank, pid, exit
  code, signal, error file, the entry's ``traceback``, whether it is the root cause); lines inside the
  table are not read again as other evidence.
* The same NCCL timeout repeated (the watchdog's line, its exception, ``what():``) is one row.
* Times: a glog or c10 prefix, or the table's ``time``: local time taken as UTC, the year from the
  file's mtime (as ``log_lines``).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from pt2logs.analysis.identity import classify_path
from pt2logs.readers.kit import EXCERPT, RowSink
from pt2logs.readers.lines import outcome_patterns as P
from pt2logs.readers.lines.outcome_table import ChildFailedTable
from pt2logs.readers.timebase import TimeBase
from pt2logs.readers.timebase import time_of_day_us as _tod

#: rows kept back until the end of the file (to find ranks by pid); more are written as they are
MAX_PENDING = 50_000
#: a line that can start or be evidence (the rest skip every other pattern)
_QUIET = re.compile(P.TRIGGERS.pattern + r"|Traceback \(most recent call last\)").search
_RANK_PID = re.compile(r"\[rank(\d{1,7})\]:[VIWEC]\d{4} \S+ +(\d+) ").match


class _Traceback:
    __slots__ = ("start", "frame")

    def __init__(self, start: int):
        self.start = start
        self.frame: str | None = None


class OutcomeLines(ChildFailedTable):
    """The evidence line reader (:class:`~pt2logs.readers.kit.LineReader`); it never takes a line."""

    def __init__(self, sink: RowSink):
        self.sink = sink
        self.ctx = sink.ctx
        self.tb = TimeBase(self.ctx.mtime)
        self.pending: list[dict[str, Any]] = []
        self.pid_rank: dict[int, int] = {}
        self.closed_pids: set[int] = set()  # pids the launcher sent a closing signal
        #: by (torchrun's local rank, rank, a process prefix: vLLM's workers interleave)
        self.tracebacks: dict[tuple[int | None, int | None, str | None], _Traceback] = {}
        self.local: int | None = None  # the local rank of torchrun's header on the line being read
        self.key: tuple = (None, None, None)  # the line's traceback key
        self.launcher = False  # the rank of the line being read is the one a launcher's prefix named (srun --label)
        self.seen: set[tuple] = set()
        self.table: dict[str, Any] | None = None  # ChildFailedError's table being read
        #: a Dynamo exception's row, by traceback key, until its "from user code:" frames are read
        self.after: dict[tuple, dict[str, Any]] = {}
        self.entry: dict[str, Any] | None = None

    # -- rows --------------------------------------------------------------------------
    def add(self, row: dict[str, Any]) -> None:
        row.setdefault("n_lines", 1)
        if row.get("local_rank") is None and self.local is not None:
            row["local_rank"] = self.local
        row["text"] = (row.get("text") or "")[:EXCERPT]
        if row.get("rank") is not None:
            row.setdefault("rank_from", "launcher" if self.launcher else "prefix")
        self.sink.stats.kinds["outcome_evidence"] = (
            self.sink.stats.kinds.get("outcome_evidence", 0) + 1
        )
        if (
            row["kind"] in ("exception", "oom")
            and (a := self.after.get(self.key)) is not None
            and a["row"] is None
        ):
            a["row"] = row  # (the Dynamo exception's row: its user frame comes later)
        if len(self.pending) < MAX_PENDING:
            self.pending.append(row)
        else:
            self._emit(row)

    def _emit(self, row: dict[str, Any]) -> None:
        if row.get("rank") is None and row.get("pid") in self.pid_rank:
            row["rank"], row["rank_from"] = self.pid_rank[row["pid"]], "pid"
        if row.get("rank") is None and self.ctx.rank is not None:
            row["rank"], row["rank_from"] = self.ctx.rank, "file"
        if (
            row.get("pid") in self.closed_pids
            and row["kind"] in ("child_failure", "signal_received", "worker_exit")
            and row.get("signal") in ("SIGTERM", "SIGKILL")
        ):
            row["secondary"] = True  # the launcher ended it after another process failed
        if isinstance(row.get("detail"), dict):
            row["detail"] = orjson.dumps(row["detail"], default=str).decode()
        self.sink.add("outcome_evidence", row)

    def _ts(self, mmdd: str | None, time: str | None) -> int | None:
        if not mmdd or not time:
            return None
        tod = _tod(time)
        if tod is None:
            return None
        self.tb.fallback(0)
        return self.tb.to_utc(self.tb.key(int(mmdd)), tod)

    # -- lines -------------------------------------------------------------------------
    def take(self, line_no: int, text: str) -> bool:
        if (
            not self.tracebacks
            and self.table is None
            and not self.after
            and ("] [__" in text[:400] or _QUIET(text) is None)
        ):
            # (a TORCH_LOGS artifact message, "] [__graph_breaks]", is torch's account of a compile: never evidence)
            # most lines of a capture: nothing to record; only a [rankN]: glog line ties its pid to its rank
            if text.startswith("[rank"):
                m = _RANK_PID(text)
                if m is not None and len(self.pid_rank) < MAX_PENDING:
                    self.pid_rank.setdefault(int(m.group(2)), int(m.group(1)))
            return False
        raw = text
        rank: int | None = None
        local: int | None = None
        if "\x1b" in text:
            text = P.ANSI.sub("", text)
        if (
            "\r" in text
        ):  # (a progress bar's line: its last part; vLLM ends every line of a message with \r)
            text = text.rstrip("\r")
            text = text[text.rfind("\r") + 1 :]
        t = P.TAIL_PREFIX.match(text) if self.table is None else None
        if t is not None:
            local = int(t.group(1) or t.group(2))
            text = text[t.end() :].lstrip(" ")
        m = P.WRAPPER.match(text)
        proc = None
        if m is not None and P.RANK_PREFIX.match(text) is None:
            proc, text = text[: m.end()], text[m.end() :]
        m = P.RANK_PREFIX.match(text)
        if m is not None:
            rank = int(m.group(1))
            text = text[m.end() :]
        launcher = False
        if (
            c := self.sink.carried
        ) is not None:  # the launcher's prefixes the unwrapping layer took off
            if local is None:
                local = c.local_rank
            if rank is None and c.rank is not None:
                rank, launcher = c.rank, True
        pid = mmdd = time = None
        g = P.GLOG.match(text) or P.C10.match(text)
        if g is not None:
            mmdd, time = g.group("mmdd"), g.group("time")
            if g.groupdict().get("pid"):
                pid = int(g.group("pid"))
                if rank is not None:
                    self.pid_rank.setdefault(pid, rank)
            text = text[g.end() :]
        elif (v := P.VLLM.match(text)) is not None:
            mmdd, time = v.group("mm") + v.group("dd"), v.group("time")
            text = text[v.end() :]
        if self.table is not None and self.table_line(line_no, text, raw):
            return False
        self.local = local
        self.launcher = launcher
        key = self.key = (local, rank, proc)
        if self.after and (a := self.after.get(key)) is not None and self.user_frame(key, a, text):
            return False
        tb = self.tracebacks.get(key)
        if tb is not None:
            f = P.FRAME.match(text)
            if f is not None:
                tb.frame = f"{f.group('file')}:{f.group('line')}" + (
                    f" in {f.group('fn')}" if f.group("fn") else ""
                )
                return False
            if text.startswith((" ", "\t")) or not text.strip():
                return False
            del self.tracebacks[key]
            self.exception(line_no, text, raw, rank, tb, key)
            return False
        if g is None and P.TRACEBACK.match(text):
            # (a traceback inside a log message is a logged exception, not the end of a process)
            self.tracebacks[key] = _Traceback(line_no)
            return False
        if P.TRIGGERS.search(text) is not None:
            # a message torch's Python logger wrote (its glog prefix): an error it caught and logged (autotune's
            # "No valid triton configs. OutOfMemoryError: out of resource", a benchmark choice that failed) is not how
            # the process ended; only the patterns that are evidence wherever they appear are read from it
            logged = g is not None and g.re is P.GLOG
            self.evidence(
                line_no,
                text,
                raw,
                rank,
                pid,
                self._ts(mmdd, time),
                skip=P.LOGGED_NOT_EVIDENCE if logged else (),
            )
        return False

    def evidence(
        self,
        line_no: int,
        text: str,
        raw: str,
        rank: int | None,
        pid: int | None,
        ts: int | None,
        extra: dict[str, Any] | None = None,
        skip: tuple[str, ...] = (),
    ) -> bool:
        """A row for the first rule that matches ``text`` (rules of a kind in ``skip`` left out); False when none does."""
        for kind, means, rx in P.LINE_RULES:
            if kind in skip:
                continue
            m = rx.search(text)
            if m is None:
                continue
            g = {k: v for k, v in m.groupdict().items() if v is not None}
            row: dict[str, Any] = {
                "line_no": line_no,
                "ts": ts,
                "kind": kind,
                "means": means,
                "rank": rank,
                "pid": int(g["pid"]) if "pid" in g else pid,
                "text": raw,
                "secondary": False,
            }
            if rank is None:
                n = P.NCCL_RANK.search(text)
                if n is not None:
                    row["rank"], row["rank_from"] = int(n.group(1)), "message"
                elif "rank" in g:
                    row["rank"], row["rank_from"] = int(g["rank"]), "message"
            P.fill(row, kind, g)
            if extra:
                row.update(extra)
            key = (
                kind,
                row["rank"],
                row.get("detail", {}).get("work") if isinstance(row.get("detail"), dict) else None,
            )
            if (
                kind
                in (
                    "collective_timeout",
                    "watchdog_status",
                    "watchdog_exception",
                    "heartbeat_timeout",
                )
                and key[2] is not None
            ):
                if key in self.seen:
                    return True
                if len(self.seen) < MAX_PENDING:
                    self.seen.add(key)
            self.add(row)
            if kind == "closing_signal" and row["pid"] is not None:
                self.closed_pids.add(row["pid"])
            return True
        return False

    def exception(
        self, line_no: int, text: str, raw: str, rank: int | None, tb: _Traceback, key: tuple
    ) -> None:
        """The line that ends a traceback: one row, of the kind its message shows."""
        m = P.EXCEPTION.match(text.strip())
        exc = m.group("type") if m is not None else None
        extra = {
            "exc_type": exc,
            "exc_message": m.group("msg") if m is not None else None,
            "location": tb.frame,
            "n_lines": line_no - tb.start + 1,
        }
        if exc and P.DYNAMO_EXC.search(exc) and len(self.after) < MAX_PENDING:
            # Dynamo's message goes on with "from user code:" and the user's frames: the row's location, when it comes
            self.after[key] = {"row": None, "frames": None, "n": 0}
        if exc and exc.endswith("ChildFailedError"):
            # the launcher's own exception: its table follows, one row per failed process
            self.table = {"root": False, "start": line_no}
            self.add(
                {
                    "line_no": line_no,
                    "kind": "launcher_failed",
                    "means": "info",
                    "rank": None,
                    "text": raw,
                    "secondary": False,
                    **extra,
                }
            )
            return
        if P.TRIGGERS.search(text) is not None and self.evidence(
            line_no, text, raw, rank, None, None, extra
        ):
            return
        self.add(
            {
                "line_no": line_no,
                "kind": "exception",
                "means": "failed",
                "rank": rank,
                "text": raw,
                "secondary": False,
                **extra,
            }
        )

    def user_frame(self, key: tuple, a: dict[str, Any], text: str) -> bool:
        """A line after a Dynamo exception: its ``from user code:`` section's frames (the innermost user-code frame,
        else the innermost, becomes the row's ``location``); True when the line belongs to the message."""
        a["n"] += 1
        if a["frames"] is None:
            if P.USER_CODE.match(text):
                a["frames"] = []
            elif a["n"] > 200 or P.TRACEBACK.match(text):
                del self.after[key]
                return False
            return True
        f = P.FRAME.match(text)
        if f is not None:
            a["frames"].append((f.group("file"), int(f.group("line")), f.group("fn")))
            return True
        if text.startswith((" ", "\t")) and text.strip() and len(a["frames"]) < 1000:
            return True  # the frame's code line
        self.close_after(key)
        return False

    def close_after(self, key: tuple) -> None:
        a = self.after.pop(key)
        if a["frames"]:
            user = [f for f in a["frames"] if classify_path(f[0]).kind == "user"] or a["frames"]
            file, line, fn = user[-1]
            if a["row"] is not None:
                a["row"]["location"] = f"{file}:{line}" + (f" in {fn}" if fn else "")

    def finish(self) -> None:
        for key in list(self.after):
            self.close_after(key)
        self.close_entry()
        for (local, tb_rank, _), tb in list(
            self.tracebacks.items()
        ):  # a traceback cut off by the end of the file
            self.local = local
            self.add(
                {
                    "line_no": tb.start,
                    "kind": "exception",
                    "means": "failed",
                    "rank": tb_rank,
                    "secondary": False,
                    "text": "Traceback (most recent call last): (the file ends before its exception line)",
                    "location": tb.frame,
                }
            )
        self.tracebacks.clear()
        rows, self.pending = self.pending, []
        for row in rows:
            self._emit(row)

"""TORCH_LOGS text (a stderr capture) → ``log_lines``, and ``recompiles`` / ``graph_breaks`` /
``kernels`` / ``extern_calls`` rows with ``source='torch_logs'``.

A line of torch's log formatter (torch 2.1+)::

    [rank1]:V1122 09:44:21.382000 14352 torch/_dynamo/guards.py:5396] [0/1] [__recompiles] Recompiling function ...

Every line of a multi-line message repeats the prefix. Rules (each tested):

* Consecutive lines of one process (``[rankN]`` + pid) with an identical prefix form one message.
  Lines of other processes or foreign lines in between do not split it: several ranks writing into
  one capture interleave (a large message goes out in several writes).
* Lines that are not torch log lines (print output, warnings, tracebacks, progress bars) are normal
  in a stderr capture: they are kept as ``foreign`` blocks in ``log_lines`` and counted
  (``stats.kinds['foreign']``), never errors. A log line glued behind a progress bar (after a ``\\r``,
  or a ``[rankN]:`` prefix mid-line) is split off and read.
* The torch 2.0-2.3 format ``[rank0]:[2023-04-13 21:42:57,808] [0/1] torch._dynamo.guards.__recompiles: [DEBUG] ...``
  (rank and compile id when known) is read too: the lines of one message repeat the prefix (2.1-2.3)
  or are the indented lines that follow (2.0).
* A glog line behind another program's prefix (``[2025-08-12 03:18:23.088] V0812 ...``, a wrapper's
  time stamp or ``(Worker pid=7)``) is read as the glog line.
* A capture as a collector or launcher wrote it (Kubernetes, Docker, journald, exports; srun, compose, Ray,
  vLLM, torchrun prefixes) reaches this reader unwrapped (:mod:`pt2logs.readers.lines.framing`): a launcher's
  rank (srun's task id) is the rank of a line without ``[rankN]:``; what the wrapping said about a row's
  first line is its ``collected_lines`` row.
* Closed messages become ``recompiles`` / ``graph_breaks`` / ``kernels`` / ``extern_calls`` rows in
  :mod:`pt2logs.readers.lines.log_messages`.
* :class:`LogLines` is a line reader of the kit (:func:`~pt2logs.readers.kit.read_lines`): it takes
  every line, so it closes any chain, e.g. after the Spyre reader in a capture that mixes both.
* Time: the glog prefix has no year and is local time, and a stderr capture has no epoch time; the
  year is the file's mtime year (the year before when the first line's date is after the mtime), and
  the local time is taken as UTC.

Memory is bounded by the open messages (one per process) and the compiles whose rows may still change
(at most :data:`~pt2logs.readers.lines.log_messages.MAX_PENDING`); rows leave in batches of ``ctx.batch_rows``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from pt2logs.readers.format import CAPTURE, Format
from pt2logs.readers.kit import Batch, FileContext, LineReaderFactory, RowSink, read_lines
from pt2logs.readers.lines import torch_shapes
from pt2logs.readers.lines.carried import carried_columns
from pt2logs.readers.lines.log_messages import MessageRows
from pt2logs.readers.lines.log_prefixes import (
    EMBEDDED,
    GLOG,
    MAX_MESSAGE_BYTES,
    MAX_RANK,
    OLD,
    WRAPPED,
    Msg,
    OtherPrefixes,
    sniff_torch_logs,
    split_compile_id,
)
from pt2logs.readers.lines.outcome_lines import OutcomeLines
from pt2logs.readers.lines.vllm_lines import VllmLines
from pt2logs.readers.timebase import TimeBase
from pt2logs.readers.timebase import time_of_day_us as _tod

#: the most text held in the open messages of all processes together: past it they are all closed
#: (each a row; a message that goes on starts a new one), so many processes cannot add up either
MAX_OPEN_BYTES = 64 << 20
MAX_FOREIGN_LINES = 1000

# ----------------------------------------------------------------------------- the reader


class LogLines(OtherPrefixes):
    """The TORCH_LOGS line reader (:class:`~pt2logs.readers.kit.LineReader`): it takes every line,
    so it is the last of a chain; lines that are not torch's become foreign ``log_lines``."""

    def __init__(self, sink: RowSink):
        self.sink = sink
        self.ctx = sink.ctx
        self.stats = sink.stats
        self.tb = TimeBase(self.ctx.mtime)
        self.messages = MessageRows(sink)
        self.open: dict[tuple[int | None, int | None], Msg] = {}
        self.held = 0  # bytes of text in self.open
        self.old: Msg | None = None  # an open pre-2.1 message (continuation lines have no prefix)
        self.foreign: list[Any] | None = None  # [line_no, texts, bytes, lines]

    def error(
        self,
        kind: str,
        line_no: int | None,
        message: str,
        excerpt: bytes | str = b"",
        severity: str = "warning",
    ) -> None:
        self.sink.error(kind, line_no, message, excerpt, severity)

    def _rank(self, carried: Any) -> int | None:
        """The rank of a line without ``[rankN]:``: the one a launcher's prefix named (srun --label), else the file's."""
        return carried.rank if carried is not None and carried.rank is not None else self.ctx.rank

    # -- time --------------------------------------------------------------------
    def _ts(self, mmdd: int, tod: int | None, line_no: int) -> int | None:
        tb = self.tb
        tb.fallback_from_mtime(mmdd, self.ctx.mtime)
        key = tb.key(mmdd)
        ts = None if tod is None else tb.to_utc(key, tod)
        if ts is None:
            self.error(
                "bad_timestamp",
                line_no,
                "the glog prefix has an impossible date or time; message kept without ts",
            )
        return ts

    # -- lines -------------------------------------------------------------------
    def take(self, line_no: int, text: str) -> bool:
        m = GLOG.match(text)
        if (
            m is None
            and text[:1] in "[("
            and (w := WRAPPED.match(text)) is not None
            and GLOG.match(text, w.end())
        ):
            text = text[
                w.end() :
            ]  # the wrapper's prefix (its own time stamp) says nothing torch's does not
            m = GLOG.match(text)
        if m is None and ("\r" in text or "[rank" in text):
            # a log line behind a progress bar (\r) or glued to other output: split it off
            cut = text.rfind("\r") + 1
            if not GLOG.match(text, cut):
                e = EMBEDDED.search(text)
                cut = e.start() if e else 0
            if cut and GLOG.match(text, cut):
                self.add_foreign(line_no, text[:cut])
                text = text[cut:]
                m = GLOG.match(text)
        if m is not None:
            if self.old is not None:
                self.close_old()
            if self.foreign is not None:
                self.close_foreign()
            self.glog_line(line_no, text, m)
            return True
        o = OLD.match(text)
        if o is not None:
            self.close_foreign()
            self.old_line(line_no, text, o)
            return True
        # torch's messages without the glog prefix: one test a line (cheap unless the line has "torch" or starts with "[")
        s = torch_shapes.match(text)
        old = self.old
        if (
            s is None
            and old is not None
            and ((text[:1] in (" ", "\t") and text.strip()) or old.continues)
            and old.nbytes < MAX_MESSAGE_BYTES
            and not text.startswith("Traceback (most recent call last)")
        ):
            old.parts.append(text)
            old.n_lines += 1
            old.nbytes += len(text) + 1
        elif s is not None and (not s.weak or (old is not None and old.prefix == s.prefix)):
            self.close_foreign()
            self.shaped_line(line_no, s)
        else:
            self.close_old()
            self.add_foreign(line_no, text)
        return True

    def glog_line(self, line_no: int, text: str, m: re.Match) -> None:
        r, level, mmdd, time, pid_s, path, lineno, trace_id, artifact, msg = m.groups()
        if msg is None:
            prefix, msg = text.rstrip(), ""
        else:  # an empty message line may have lost its trailing space (pastes, editors)
            prefix = text[: m.start(10)].rstrip()
        if r is not None:
            rank = int(r)
        elif (c := self.sink.carried) is None or c.rank is None:
            rank = self.ctx.rank
        else:  # a launcher's prefix named it (srun --label)
            rank = c.rank
        if rank is not None and rank >= MAX_RANK:
            self.error(
                "bad_value",
                line_no,
                f"[rank{(r or '')[:40]}] is not a rank; read as no rank, line kept",
            )
            rank = None
        pid = int(pid_s)
        key = (rank, pid)
        cur = self.open.get(key)
        if cur is not None and cur.prefix == prefix and cur.nbytes < MAX_MESSAGE_BYTES:
            cur.parts.append(msg)
            cur.n_lines += 1
            cur.nbytes += len(msg) + 1
            self.held += len(msg) + 1
            if self.held > MAX_OPEN_BYTES:
                self.error(
                    "message_too_long",
                    line_no,
                    f"the open messages hold more than {MAX_OPEN_BYTES >> 20} MiB: "
                    "each was closed as a row (one that goes on continues in a new row)",
                )
                self.close_open()
            return
        if cur is not None:
            if cur.prefix == prefix:
                self.error(
                    "message_too_long",
                    line_no,
                    f"a message longer than {MAX_MESSAGE_BYTES >> 20} MiB was cut into several rows",
                )
            del self.open[key]
            self.close(cur)
        cid, attempt = split_compile_id(trace_id)
        new = Msg(line_no, prefix, rank, level, pid, path, int(lineno), cid, attempt, artifact, msg)
        new.ts = self._ts(int(mmdd), _tod(time), line_no)
        new.carried = self.sink.carried
        self.open[key] = new
        self.held += new.nbytes
        if rank is not None:
            self.stats.ranks.add(rank)

    def close_old(self) -> None:
        if self.old is not None:
            msg, self.old = self.old, None
            self.close(msg)

    # -- foreign lines -------------------------------------------------------------
    def add_foreign(self, line_no: int, text: str, n: int = 1) -> None:
        """One foreign line, or ``n`` blank ones as ``text`` = ``"\\n" * (n - 1)`` (joined with "\\n", the same text)."""
        self.stats.kinds["foreign"] = self.stats.kinds.get("foreign", 0) + n
        f = self.foreign
        if f is not None and (f[3] + n > MAX_FOREIGN_LINES or f[2] >= MAX_MESSAGE_BYTES):
            self.close_foreign()
            f = None
        if f is None:
            self.foreign = [line_no, [text], len(text), n, self.sink.carried]
        else:
            f[1].append(text)
            f[2] += len(text) + 1
            f[3] += n

    def blank_lines(self, line_no: int, k: int) -> None:
        """``k`` blank lines after a blank line taken as foreign: in blocks of at most MAX_FOREIGN_LINES
        lines, each added as one piece of text (no Python object per line)."""
        while k:
            f = self.foreign
            room = MAX_FOREIGN_LINES - f[3] if f is not None else MAX_FOREIGN_LINES
            n = min(k, room) if room > 0 else min(k, MAX_FOREIGN_LINES)
            self.add_foreign(line_no, "\n" * (n - 1), n)
            line_no += n
            k -= n

    def close_foreign(self) -> None:
        f = self.foreign
        if f is None:
            return
        self.foreign = None
        text = "\n".join(f[1])
        self.sink.nbytes += len(text)
        rank = self._rank(f[4])
        self.sink.add(
            "log_lines",
            {
                "file": self.ctx.file,
                "line_no": f[0],
                "n_lines": f[3],
                "rank": rank,
                "message": text,
                "foreign": True,
            },
        )
        if f[4] is not None:
            self.sink.add("collected_lines", carried_columns(f[4], self.ctx.file, f[0], rank))

    # -- messages --------------------------------------------------------------------
    def close(self, msg: Msg) -> None:
        if msg.pid is not None:
            self.held -= msg.nbytes
        text = msg.text
        st = self.stats
        st.events += 1
        kind = msg.artifact or "untagged"
        st.kinds[kind] = st.kinds.get(kind, 0) + 1
        if msg.ts is not None:
            st.merge_ts(msg.ts, msg.ts)
        self.sink.nbytes += len(text)
        self.sink.add(
            "log_lines",
            {
                "file": self.ctx.file,
                "line_no": msg.line_no,
                "n_lines": msg.n_lines,
                "ts": msg.ts,
                "level": msg.level,
                "pid": msg.pid,
                "pathname": msg.path,
                "lineno": msg.lineno,
                "compile_id": msg.cid,
                "attempt": msg.attempt,
                "artifact": msg.artifact,
                "message": text,
                "foreign": False,
                "rank": msg.rank,
            },
        )
        if msg.carried is not None:
            self.sink.add(
                "collected_lines",
                carried_columns(msg.carried, self.ctx.file, msg.line_no, msg.rank),
            )
        self.messages.message(msg, text)

    def finish(self) -> None:
        self.close_old()
        self.close_foreign()
        self.close_open()
        self.messages.finish()

    def close_open(self) -> None:
        """Close every open glog message, in line order."""
        msgs = sorted(self.open.values(), key=lambda m: m.line_no)
        self.open.clear()
        for msg in msgs:
            self.close(msg)


def capture_chain(*own: LineReaderFactory) -> tuple[LineReaderFactory, ...]:
    """The line readers of a stderr / stdout capture, in order: :class:`~.outcome_lines.OutcomeLines` (the
    lines that say how processes ended → ``outcome_evidence``) and :class:`~.vllm_lines.VllmLines` (vLLM's
    compile lines → ``vllm_log_events``) look at every line and take none; then a format's ``own``
    readers (Spyre's); :class:`LogLines` takes the rest. Every capture format is read with it."""
    return (OutcomeLines, VllmLines, *own, LogLines)


def read_capture(
    chunks: Iterable[bytes], ctx: FileContext, own: tuple[LineReaderFactory, ...] = ()
) -> Iterator[Batch]:
    """One capture given as byte chunks, read with :func:`capture_chain`; yields ``(table, batch)``."""
    return read_lines(chunks, ctx, capture_chain(*own))


#: a TORCH_LOGS capture: its reader is the capture chain
FORMAT = Format(
    "torch_logs",
    "TORCH_LOGS text: a stderr capture of torch's log lines",
    sniff_torch_logs,
    role=CAPTURE,
    lines=capture_chain(),
    auxiliary=True,
    source="torch_logs",
    source_rank=4,
    switch="TORCH_LOGS (stderr text)",
)
read_torch_logs = FORMAT.read

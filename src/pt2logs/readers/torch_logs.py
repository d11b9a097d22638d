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
* The pre-2.1 format ``[2023-04-13 21:42:57,808] torch._dynamo.convert_frame.__recompiles: [DEBUG] ...``
  is read too; its continuation lines are the indented lines that follow.
* Messages are interpreted with the shared parsers of :mod:`pt2logs.analysis`:
  ``[__recompiles]`` / ``[__recompiles_verbose]`` → ``recompiles`` (one row per compile id, like the
  trace); the recompile-limit warning (``torch._dynamo hit config.recompile_limit (8)``, no artifact
  tag) marks that compile's row as a limit hit, or makes one; ``[__graph_breaks]`` → ``graph_breaks``,
  repeats of a break within one compile id (duplicate-suppressed lines) folded into ``occurrences``;
  ``[__output_code]`` → ``kernels`` / ``extern_calls``.
* Time: the glog prefix has no year and is local time, and a stderr capture has no epoch time; the
  year is the file's mtime year (the year before when the first line's date is after the mtime), and
  the local time is taken as UTC.

Memory is bounded by the open messages (one per process) and the compiles whose rows may still change
(at most :data:`MAX_PENDING`); rows leave in batches of ``ctx.batch_rows``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import date, datetime, timedelta, timezone
from typing import Any

import pt2logs.tables  # noqa: F401  (registers the tables)
from pt2logs.analysis.graph_breaks import parse_graph_break
from pt2logs.analysis.guards import (
    classify_guard,
    parse_recompile_limit_message,
    parse_recompiles_message,
)
from pt2logs.analysis.output_code import parse_output_code
from pt2logs.readers.errors import EXCERPT, Batch, add_error
from pt2logs.readers.timebase import TimeBase
from pt2logs.readers.torch_trace import FileContext
from pt2logs.schema import Rows

SOURCE = "torch_logs"
MAX_LINE = 64 << 20
MAX_MESSAGE_BYTES = 256 << 20
MAX_FOREIGN_LINES = 1000
MAX_PENDING = 10_000

GLOG = re.compile(
    r"(?:\[rank(?P<rank>\d+)\]:)?(?P<level>[VIWEC])(?P<mmdd>\d{4}) (?P<time>\S+) +(?P<pid>\d+) "
    r"(?P<path>.+?):(?P<lineno>\d+)\](?: \[(?P<trace_id>!?\d+(?:/\d+){0,2}(?:_\d+)?)\])?"
    r"(?: \[__(?P<artifact>\w+)\])?(?: (?P<msg>.*))?$"
)
OLD = re.compile(
    r"\[(?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d),(?P<ms>\d{3})\] (?P<logger>[\w.]+): "
    r"\[(?P<levelname>DEBUG|INFO|WARNING|ERROR|CRITICAL)\] ?(?P<msg>.*)$"
)
_EMBEDDED = re.compile(r"\[rank\d+\]:[VIWEC]\d{4} \d\d:\d\d:\d\d")
_TIME = re.compile(r"(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?$")
_LIMIT_MSG = re.compile(r"hit config\.\w*(?:recompile|cache_size)_limit|cache_size_limit \(\d+\)")
_GB_START = re.compile(r"^Graph break (?:\(user stack suppressed due to duplicate graph break\) )?in user code at ", re.M)
_LEVELS = {"DEBUG": "V", "INFO": "I", "WARNING": "W", "ERROR": "E", "CRITICAL": "C"}


# ----------------------------------------------------------------------------- lines


def iter_lines(chunks: Iterable[bytes], on_error: Any) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, line without its end of line) for byte chunks cut anywhere."""
    buf = b""
    n = 0
    for chunk in chunks:
        if not chunk:
            continue
        buf = buf + chunk if buf else chunk
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            n += 1
            line = buf[start:nl]
            yield n, line[:-1] if line.endswith(b"\r") else line
            start = nl + 1
        buf = buf[start:]
        if len(buf) > MAX_LINE:
            n += 1
            on_error("line_too_long", n, f"a line longer than {MAX_LINE >> 20} MiB was cut into pieces", buf[:EXCERPT])
            yield n, buf
            buf = b""
    if buf:
        n += 1
        yield n, buf[:-1] if buf.endswith(b"\r") else buf


def split_compile_id(trace_id: str | None) -> tuple[str | None, int | None]:
    """``0/1_2`` -> (``0/1``, 2); ``!0/1/2`` -> (``!0/1/2``, 0); None -> (None, None)."""
    if not trace_id:
        return None, None
    cid, _, att = trace_id.partition("_")
    return cid, int(att) if att else 0


def _frame_of(cid: str | None) -> str | None:
    return None if cid is None else cid.rsplit("/", 1)[0] if "/" in cid else cid


def _tod(text: str) -> int | None:
    m = _TIME.match(text)
    if m is None:
        return None
    hh, mi, ss, frac = m.groups()
    if int(hh) > 23 or int(mi) > 59 or int(ss) > 60:
        return None
    us = int((frac or "0").ljust(6, "0"))
    return ((int(hh) * 60 + int(mi)) * 60 + int(ss)) * 1_000_000 + us


# ----------------------------------------------------------------------------- the reader


class _Msg:
    __slots__ = ("line_no", "n_lines", "prefix", "rank", "level", "pid", "path", "lineno",
                 "cid", "attempt", "artifact", "parts", "nbytes", "ts")

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

    @property
    def text(self) -> str:
        return "\n".join(self.parts)


class _Reader:
    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.stats = ctx.stats
        self.tb = TimeBase(ctx.mtime)
        self.rows = {n: Rows(n) for n in ("log_lines", "recompiles", "graph_breaks", "kernels", "extern_calls")}
        self.errors = Rows("ingest_errors")
        self.open: dict[tuple[int | None, int | None], _Msg] = {}
        self.old: _Msg | None = None  # an open pre-2.1 message (continuation lines have no prefix)
        self.foreign: list[Any] | None = None  # [line_no, lines, bytes]
        self.pending_rc: dict[tuple, dict[str, Any]] = {}
        self.pending_gb: dict[tuple, dict[tuple, dict[str, Any]]] = {}
        self.frames: dict[tuple, tuple[str | None, str | None, int | None]] = {}
        self.nbytes = 0

    # -- errors ------------------------------------------------------------------
    def error(self, kind: str, line_no: int | None, message: str, excerpt: bytes | str = b"", severity: str = "warning") -> None:
        add_error(self.errors, self.ctx, kind, line_no, message, excerpt, severity)

    # -- time --------------------------------------------------------------------
    def _ts(self, mmdd: int, tod: int | None, line_no: int) -> int | None:
        tb = self.tb
        if tb.year is None:
            tb.fallback(0)
            if self.ctx.mtime:
                mt = datetime.fromtimestamp(self.ctx.mtime, tz=timezone.utc).date()
                try:
                    if date(mt.year, mmdd // 100, mmdd % 100) > mt + timedelta(days=1):
                        tb.year = mt.year - 1  # a December log whose file was last written in January
                except ValueError:
                    pass
        key = tb.key(mmdd)
        ts = None if tod is None else tb.to_utc(key, tod)
        if ts is None:
            self.error("bad_timestamp", line_no, "the glog prefix has an impossible date or time; message kept without ts")
        return ts

    # -- lines -------------------------------------------------------------------
    def line(self, line_no: int, raw: bytes) -> Iterator[Batch]:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            self.error("decode_error", line_no, f"invalid UTF-8 at byte {e.start}; kept with U+FFFD replacements",
                       raw[max(0, e.start - 40): e.start + 40])
            text = raw.decode("utf-8", "replace")
        m = GLOG.match(text)
        if m is None and ("\r" in text or "[rank" in text):
            # a log line behind a progress bar (\r) or glued to other output: split it off
            cut = text.rfind("\r") + 1
            if not GLOG.match(text, cut):
                e = _EMBEDDED.search(text)
                cut = e.start() if e else 0
            if cut and GLOG.match(text, cut):
                self.add_foreign(line_no, text[:cut])
                text = text[cut:]
                m = GLOG.match(text)
        if m is not None:
            self.close_old()
            self.close_foreign()
            self.glog_line(line_no, text, m)
        else:
            o = OLD.match(text)
            if o is not None:
                self.close_old()
                self.close_foreign()
                self.old_line(line_no, o)
            elif self.old is not None and text[:1] in (" ", "\t") and text.strip():
                self.old.parts.append(text)
                self.old.n_lines += 1
                self.old.nbytes += len(text) + 1
            else:
                self.close_old()
                self.add_foreign(line_no, text)
        if self.nbytes >= self.ctx.batch_bytes or len(self.rows["log_lines"]) >= self.ctx.batch_rows:
            yield from self.flush()

    def glog_line(self, line_no: int, text: str, m: re.Match) -> None:
        start = m.start("msg") if m.group("msg") is not None else len(text)
        prefix = text[:start].rstrip()  # an empty message line may have lost its trailing space (pastes, editors)
        rank = int(m.group("rank")) if m.group("rank") is not None else self.ctx.rank
        pid = int(m.group("pid"))
        msg = m.group("msg") or ""
        key = (rank, pid)
        cur = self.open.get(key)
        if cur is not None and cur.prefix == prefix and cur.nbytes < MAX_MESSAGE_BYTES:
            cur.parts.append(msg)
            cur.n_lines += 1
            cur.nbytes += len(msg) + 1
            return
        if cur is not None:
            if cur.prefix == prefix:
                self.error("message_too_long", line_no, f"a message longer than {MAX_MESSAGE_BYTES >> 20} MiB was cut into several rows")
            del self.open[key]
            self.close(cur)
        cid, attempt = split_compile_id(m.group("trace_id"))
        new = _Msg(line_no, prefix, rank, m.group("level"), pid, m.group("path"), int(m.group("lineno")), cid, attempt,
                   m.group("artifact"), msg)
        new.ts = self._ts(int(m.group("mmdd")), _tod(m.group("time")), line_no)
        self.open[key] = new
        if rank is not None:
            self.stats.ranks.add(rank)

    def old_line(self, line_no: int, o: re.Match) -> None:
        logger = o.group("logger")
        art = logger.rsplit(".", 1)[-1]
        new = _Msg(line_no, "", self.ctx.rank, _LEVELS[o.group("levelname")], None, logger, None, None, None,
                   art[2:] if art.startswith("__") else None, o.group("msg"))
        try:
            d = date.fromisoformat(o.group("date"))
            tod = _tod(f"{o.group('time')}.{o.group('ms')}")
            new.ts = (d.toordinal() - date(1970, 1, 1).toordinal()) * 86_400_000_000 + (tod or 0)
        except ValueError:
            self.error("bad_timestamp", line_no, "impossible date in the log prefix; message kept without ts")
        self.old = new  # ends at the next line that is not an indented continuation

    def close_old(self) -> None:
        if self.old is not None:
            msg, self.old = self.old, None
            self.close(msg)

    # -- foreign lines -------------------------------------------------------------
    def add_foreign(self, line_no: int, text: str) -> None:
        self.stats.kinds["foreign"] = self.stats.kinds.get("foreign", 0) + 1
        f = self.foreign
        if f is not None and (len(f[1]) >= MAX_FOREIGN_LINES or f[2] >= MAX_MESSAGE_BYTES):
            self.close_foreign()
            f = None
        if f is None:
            self.foreign = [line_no, [text], len(text)]
        else:
            f[1].append(text)
            f[2] += len(text) + 1

    def close_foreign(self) -> None:
        f = self.foreign
        if f is None:
            return
        self.foreign = None
        text = "\n".join(f[1])
        self.nbytes += len(text)
        self.rows["log_lines"].add({"file": self.ctx.file, "line_no": f[0], "n_lines": len(f[1]), "rank": self.ctx.rank,
                                    "message": text, "foreign": True})

    # -- messages --------------------------------------------------------------------
    def close(self, msg: _Msg) -> None:
        text = msg.text
        st = self.stats
        st.events += 1
        kind = msg.artifact or "untagged"
        st.kinds[kind] = st.kinds.get(kind, 0) + 1
        if msg.ts is not None:
            st.merge_ts(msg.ts, msg.ts)
        self.nbytes += len(text)
        self.rows["log_lines"].add({
            "file": self.ctx.file, "line_no": msg.line_no, "n_lines": msg.n_lines, "ts": msg.ts, "level": msg.level,
            "pid": msg.pid, "pathname": msg.path, "lineno": msg.lineno, "compile_id": msg.cid, "attempt": msg.attempt,
            "artifact": msg.artifact, "message": text, "foreign": False, "rank": msg.rank,
        })
        art = msg.artifact
        if art in ("recompiles", "recompiles_verbose"):
            self.recompile(msg, text)
        elif art == "graph_breaks":
            self.graph_breaks(msg, text)
        elif art == "output_code" and text.lstrip().startswith("Output code:"):
            self.output_code(msg, text)
        elif msg.level in ("W", "I", "V") and _LIMIT_MSG.search(text.split("\n", 1)[0]):
            self.limit_hit(msg, text)

    def _base(self, msg: _Msg) -> dict[str, Any]:
        return {"source": SOURCE, "file": self.ctx.file, "line_no": msg.line_no, "compile_id": msg.cid,
                "rank": msg.rank, "ts": msg.ts}

    def recompile(self, msg: _Msg, text: str) -> None:
        key = (msg.rank, msg.cid)
        p = parse_recompiles_message(text)
        if p["co_name"] is not None:
            self.frames[(msg.rank, _frame_of(msg.cid))] = (p["co_name"], p["co_filename"], p["co_firstlineno"])
        if key in self.pending_rc and msg.cid is not None:
            return  # recompiles and recompiles_verbose both on: one row per compile
        reasons = p["reasons"]
        prev, first = reasons[0] if reasons else (None, None)
        cause, subject = classify_guard(first) if first else ("other", None)
        row = self._base(msg)
        row.update(co_name=p["co_name"], co_filename=p["co_filename"], co_firstlineno=p["co_firstlineno"], reason=first,
                   all_reasons=[r for _, r in reasons], cause=cause, guard_subject=subject, prev_compile_id=prev,
                   is_limit_hit=False)
        self._pend(self.pending_rc, key if msg.cid is not None else (msg.rank, None, msg.line_no), row)

    def limit_hit(self, msg: _Msg, text: str) -> None:
        p = parse_recompile_limit_message(text)
        if p["co_name"] is not None:
            self.frames.setdefault((msg.rank, _frame_of(msg.cid)), (p["co_name"], p["co_filename"], p["co_firstlineno"]))
        row = self.pending_rc.get((msg.rank, msg.cid)) if msg.cid is not None else None
        if row is None:
            prev, reason = p["last_reason"] or (None, None)
            subject = classify_guard(reason)[1] if reason else None
            row = self._base(msg)
            row.update(co_name=p["co_name"], co_filename=p["co_filename"], co_firstlineno=p["co_firstlineno"],
                       reason=reason, all_reasons=[reason] if reason else [], guard_subject=subject,
                       prev_compile_id=prev)
            self._pend(self.pending_rc, (msg.rank, msg.cid) if msg.cid is not None else (msg.rank, None, msg.line_no), row)
        row.update(cause="recompile_limit_hit", is_limit_hit=True)

    def graph_breaks(self, msg: _Msg, text: str) -> None:
        starts = [m.start() for m in _GB_START.finditer(text)]
        bounds = [0, *starts[1:]] if starts and starts[0] > 0 else starts or [0]
        pieces = [text[a:b] for a, b in zip(bounds, [*bounds[1:], len(text)], strict=True)]
        key = (msg.rank, msg.cid if msg.cid is not None else f"line {msg.line_no}")
        breaks = self.pending_gb.get(key)
        if breaks is None:
            breaks = {}
            self._pend(self.pending_gb, key, breaks)
        for piece in pieces:
            if not piece.strip():
                continue
            gb = parse_graph_break(piece)
            k = (gb.get("gb_id") or gb.get("gb_type"), gb.get("user_filename"), gb.get("user_lineno"))
            if k in breaks:
                breaks[k]["occurrences"] += 1
                continue
            row = self._base(msg)
            row.update({c: gb.get(c) for c in ("gb_id", "gb_type", "reason", "user_filename", "user_lineno", "explanation", "hints")})
            row.update(occurrences=1, origin="log_line")
            breaks[k] = row

    def output_code(self, msg: _Msg, text: str) -> None:
        oc = parse_output_code(text)
        base = self._base(msg)
        for k in oc.kernels:
            self.rows["kernels"].add(dict(base, kernel_name=k.kernel_name, backend=k.backend, kind=k.kind,
                                          fused_ops=list(k.fused_ops), graph=oc.graph, cache_hit=None))
        for op, n in sorted(oc.extern_calls.items()):
            self.rows["extern_calls"].add(dict(base, op=op, count=n, graph=oc.graph, cache_hit=None))

    def _pend(self, d: dict, key: tuple, value: Any) -> None:
        d[key] = value
        if len(d) > MAX_PENDING:
            oldest = next(iter(d))
            self._emit_pending(d, oldest)

    def _emit_pending(self, d: dict, key: tuple) -> None:
        v = d.pop(key)
        if d is self.pending_rc:
            self.rows["recompiles"].add(v)
            return
        for row in v.values():
            if row.get("co_name") is None:
                co = self.frames.get((row["rank"], _frame_of(row["compile_id"])))
                if co is not None:
                    row["co_name"], row["co_filename"], row["co_firstlineno"] = co
            self.rows["graph_breaks"].add(row)

    # -- output ------------------------------------------------------------------------
    def flush(self) -> Iterator[Batch]:
        self.nbytes = 0
        for name, rows in self.rows.items():
            if len(rows):
                yield name, rows.take()
        if len(self.errors):
            yield "ingest_errors", self.errors.take()

    def finish(self) -> Iterator[Batch]:
        self.close_old()
        self.close_foreign()
        for msg in sorted(self.open.values(), key=lambda m: m.line_no):
            self.close(msg)
        self.open.clear()
        for d in (self.pending_rc, self.pending_gb):
            for key in list(d):
                self._emit_pending(d, key)
        yield from self.flush()


def read_torch_logs(chunks: Iterable[bytes], ctx: FileContext) -> Iterator[Batch]:
    """Parse one TORCH_LOGS stderr capture given as byte chunks; yield ``(table, batch)``."""
    r = _Reader(ctx)
    last = 0
    for line_no, raw in iter_lines(chunks, r.error):
        last = line_no
        yield from r.line(line_no, raw)
    ctx.stats.lines = last
    yield from r.finish()


# ----------------------------------------------------------------------------- sniffing

_SNIFF_TEXT = re.compile(
    rb"^(?:\[rank\d+\]:)?[VIWEC]\d{4} \d\d:\d\d:\d\d\.\d{1,6} +\d+ [^\]\n]+:\d+\](?P<json> \{)?", re.M)
_SNIFF_OLD = re.compile(rb"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] torch\.[\w.]+: \[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\] ", re.M)


def sniff_torch_logs(head: bytes, name: str) -> bool:
    """TORCH_LOGS text: glog lines whose message is text (a TORCH_TRACE header's is a JSON object),
    anywhere in the head (stderr often starts with warnings or prints). Files a Spyre sniffer claims
    (Spyre captures mix torch log lines in) are left to it."""
    text = trace_like = 0
    for m in _SNIFF_TEXT.finditer(head):
        if m.group("json"):
            trace_like += 1
        else:
            text += 1
    if text == 0:
        text = len(_SNIFF_OLD.findall(head))
    if text == 0 or text < trace_like:
        return False
    from pt2logs.readers import FORMATS

    spyre = FORMATS.get("spyre_log")
    try:
        return not (spyre is not None and spyre.sniff(head, name))
    except Exception:  # noqa: BLE001 - another sniffer's failure is not ours
        return True

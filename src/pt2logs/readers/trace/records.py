"""Split a TORCH_TRACE byte stream into records, fast and without losing anything.

A record is one header line (glog prefix + a JSON envelope) and zero or more
payload lines, each starting with one TAB::

    V1206 15:18:15.925000 1500233 torch/_dynamo/utils.py:1288] {"chromium_event": {}, "has_payload": "490a..."}
    \t{
    \t"name": "compile_file",
    ...

The splitter works on large byte chunks: it finds line starts that are not
payload lines with one C-level regex search, slices payloads out of the chunk
and strips their tabs with ``bytes.replace``. No per-line Python objects.

Robustness rules (each tested):

* A line that is neither a payload line nor a valid header is garbage: it is
  reported (``bad_prefix``) and skipped; the record it interrupts goes on, and
  the next valid header resyncs. An empty line inside a payload is an empty
  payload line whose tab was lost (editors strip it).
* A header whose JSON does not parse is reported (``bad_json`` /
  ``not_an_object``) with its payload lines, which are not orphaned.
* Payload lines before any header are reported once (``orphan_payload``).
* CRLF files (a log that went through Windows) are detected on the first line
  and their ``\\r`` stripped, so md5s still match.
* A file that does not end with a newline was cut: reported (``truncated``).
* A line longer than :data:`~pt2logs.readers.kit.MAX_LINE` is reported (``line_too_long``) and
  skipped: unlike a text line, a cut JSON envelope or payload line could not be read anyway.
* A payload larger than :data:`MAX_PAYLOAD` keeps its first MAX_PAYLOAD bytes; the rest is counted
  (line numbers stay right) and reported (``payload_too_large``). Runs of empty payload lines cost a
  byte each, not an object each: memory stays bounded whatever the input.

Records are yielded as plain tuples (see :data:`Record`) so that a 1 GB file
costs no more Python objects than it has records.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from pt2logs.readers.kit import EXCERPT, MAX_LINE

#: the most of one record's payload held in memory (and kept); the rest of a larger one is skipped
MAX_PAYLOAD = 24 << 20

# glog prefix: level, MMDD, HH:MM:SS, micros, thread, path, lineno. The JSON starts after "] ".
HEADER_RE = re.compile(rb"([VIWEC])(\d{4}) (\d\d):(\d\d):(\d\d)\.(\d{6}) +(\d+) ([^\n]*?):(\d+)\] ")
#: a line start that is not a payload line (TAB) nor an empty line (an empty line inside a payload is a
#: payload line that lost its TAB: it stays in the payload segment, so runs of them cost nothing)
_LINE_START = re.compile(rb"\n(?![\t\n])")


class Record(NamedTuple):
    line_no: int  # 1-based line of the header
    n_lines: int  # header + payload lines
    level: bytes
    mmdd: int  # month * 100 + day, from the prefix (no year there)
    tod_us: int  # time of day in microseconds, local time of the writer
    thread: int
    pathname: bytes
    lineno: int
    envelope: bytes  # the JSON text of the envelope
    payload: bytes | None  # tab-stripped payload, or None when there are no payload lines
    md5: str | None = (
        None  # the payload's md5 (hex), when the native splitter computed it in its pass
    )


#: on_error(kind, line_no, message, excerpt)
ErrorSink = Callable[[str, int, str, bytes], None]


_TOD: dict[bytes, int] = {}


def _tod(hms: bytes) -> int:
    v = _TOD.get(hms)
    if v is None:
        v = _TOD[hms] = ((int(hms[0:2]) * 60 + int(hms[3:5])) * 60 + int(hms[6:8])) * 1_000_000
    return v


_HDR = re.compile(rb"([VIWEC])(\d{4}) (\d\d:\d\d:\d\d)\.(\d{6}) +(\d+) ([^\n]*?):(\d+)\] ")
_LEVELS = frozenset(b"VIWEC")


class WholeLines:
    """Byte chunks (cut anywhere) → buffers of whole lines, for both splitters (this module's and the
    native one): the over-long-line rule (reported once, dropped to its newline), the CRLF guess from
    the first line, and a missing final newline (one is added; ``ended_with_newline`` says so).

    Iterating yields ``(buf, last_nl)``: ``buf[: last_nl + 1]`` are whole lines, the first numbered
    ``line_at``. The consumer keeps ``line_at`` current (the number of the line after the ones it
    took) before it asks for the next buffer."""

    __slots__ = ("chunks", "on_error", "line_at", "crlf", "ended_with_newline")

    def __init__(self, chunks: Iterable[bytes], on_error: ErrorSink, first_line: int = 1):
        self.chunks, self.on_error = chunks, on_error
        self.line_at = first_line
        self.crlf: bool | None = None
        self.ended_with_newline = True

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        on_error = self.on_error
        buf = b""
        it = iter(self.chunks)
        exhausted = False
        skipping = (
            False  # inside a line longer than MAX_LINE: its bytes are dropped up to its newline
        )
        while not exhausted:
            chunk = next(it, None)
            if chunk is None:
                exhausted = True
                if skipping:
                    self.ended_with_newline = False
                if not buf:
                    break
                self.ended_with_newline = buf.endswith(b"\n")
                if not self.ended_with_newline:
                    buf += b"\n"
            else:
                if not chunk:
                    continue
                if skipping:
                    nl = chunk.find(b"\n")
                    if nl < 0:
                        continue
                    skipping = False
                    self.line_at += 1
                    chunk = chunk[nl + 1 :]
                    if not chunk:
                        continue
                elif (
                    len(buf) + len(chunk) > MAX_LINE
                    and chunk.find(b"\n") < 0
                    and buf.find(b"\n") < 0
                ):
                    # one line grows past the bound: report it once, drop it to its newline (no 64 MiB copies)
                    on_error(
                        "line_too_long",
                        self.line_at,
                        f"a line longer than {MAX_LINE >> 20} MiB; skipped",
                        buf[:EXCERPT],
                    )
                    buf, skipping = b"", True
                    continue
                buf = buf + chunk if buf else chunk
                if self.crlf is None:
                    nl = buf.find(b"\n")
                    if nl < 0 and len(buf) < (1 << 20):
                        continue
                    self.crlf = nl > 0 and buf[nl - 1 : nl] == b"\r"
            last_nl = buf.rfind(b"\n")
            if last_nl < 0:
                if len(buf) > MAX_LINE:
                    on_error(
                        "line_too_long",
                        self.line_at,
                        f"a line longer than {MAX_LINE >> 20} MiB; skipped",
                        buf[:EXCERPT],
                    )
                    buf = b""
                continue
            yield buf, last_nl
            buf = buf[last_nl + 1 :]


def iter_records(
    chunks: Iterable[bytes], on_error: ErrorSink, first_line: int = 1
) -> Iterator[Record]:
    """Yield the records of a trace given as an iterable of byte chunks.

    ``chunks`` may cut lines anywhere. ``first_line`` is the line number of the
    first byte (for pieces of a split file). Problems go to ``on_error``;
    nothing here raises on bad input.

    One C-level regex pass per chunk finds every line start that is not a
    payload line; payload lines between two of them are sliced out in one
    piece and counted with ``bytes.count``. Python only runs per record.
    """
    lines = WholeLines(chunks, on_error, first_line)
    # the open record: line_no, header fields (None for a pseudo-record after garbage), payload parts
    p_line = 0
    p_fields: tuple | None = None
    p_parts: list[bytes | bytearray] = []
    p_open = False
    p_n = 0
    p_size = 0  # bytes held for the open record's payload: at most MAX_PAYLOAD
    p_cut = False
    hdr_match = _HDR.match
    starts_of = _LINE_START.finditer
    tod = _tod
    levels = _LEVELS
    line_at = first_line  # line number of buf[0]
    crlf: bool | None = None
    for buf, last_nl in lines:
        line_at, crlf = lines.line_at, lines.crlf
        pos = 0  # first byte not yet assigned to a record
        starts = [m.start() + 1 for m in starts_of(buf, 0, last_nl)]
        if buf[0] != 9:
            starts.insert(0, 0)
        for s in starts:
            if s > pos:
                n = buf.count(b"\n", pos, s)
                if p_open:
                    if p_size < MAX_PAYLOAD:
                        p_parts.append(buf[pos:s])
                        p_size += s - pos
                    else:
                        p_cut = True
                    p_n += n
                elif buf[pos:s].strip():
                    on_error(
                        "orphan_payload",
                        line_at,
                        f"{n} payload line(s) with no header before them; skipped",
                        buf[pos : min(s, pos + EXCERPT)],
                    )
                line_at += n
            end = buf.find(b"\n", s)
            m = hdr_match(buf, s, end) if buf[s] in levels else None
            if m is None:
                line = buf[s : end - 1 if crlf and end > s and buf[end - 1] == 13 else end]
                if line:
                    on_error(
                        "bad_prefix",
                        line_at,
                        "line is neither a payload line (TAB) nor a glog header; skipped",
                        line[:EXCERPT],
                    )
                    if not p_open:
                        # payload lines after garbage with no record open are orphans, reported once
                        p_open, p_fields, p_parts, p_line, p_n, p_size, p_cut = (
                            True,
                            None,
                            [],
                            line_at,
                            1,
                            0,
                            False,
                        )
                elif p_open:
                    # an empty payload line whose TAB was lost: runs of them share one bytearray
                    if p_size < MAX_PAYLOAD:
                        if p_parts and type(p_parts[-1]) is bytearray:
                            p_parts[-1].append(10)
                        else:
                            p_parts.append(bytearray(b"\n"))
                        p_size += 1
                    else:
                        p_cut = True
                    p_n += 1
                line_at += 1
                pos = end + 1
                continue
            if p_open:
                if p_fields is not None:
                    if p_cut:
                        _too_large(on_error, p_line, p_n)
                    yield _record(p_line, p_n, p_fields, p_parts, crlf)
                elif p_parts:
                    on_error(
                        "orphan_payload",
                        p_line + 1,
                        "payload line(s) after a bad line; skipped",
                        b"".join(p_parts)[:EXCERPT],
                    )
            lv, mmdd, hms, us, thread, path, lineno = m.groups()
            env = buf[m.end() : end - 1 if crlf and buf[end - 1] == 13 else end]
            p_fields = (lv, int(mmdd), tod(hms) + int(us), int(thread), path, int(lineno), env)
            p_line, p_parts, p_open, p_n, p_size, p_cut = line_at, [], True, 1, 0, False
            line_at += 1
            pos = end + 1
        if pos <= last_nl:
            n = buf.count(b"\n", pos, last_nl + 1)
            if p_open:
                if p_size < MAX_PAYLOAD:
                    p_parts.append(buf[pos : last_nl + 1])
                    p_size += last_nl + 1 - pos
                else:
                    p_cut = True
                p_n += n
            elif buf[pos : last_nl + 1].strip():
                on_error(
                    "orphan_payload",
                    line_at,
                    f"{n} payload line(s) with no header before them; skipped",
                    buf[pos : min(last_nl + 1, pos + EXCERPT)],
                )
            line_at += n
        lines.line_at = line_at
    line_at = lines.line_at
    if p_open:
        if p_fields is not None:
            if p_cut:
                _too_large(on_error, p_line, p_n)
            yield _record(p_line, p_n, p_fields, p_parts, crlf)
        elif p_parts:
            on_error(
                "orphan_payload",
                p_line + 1,
                "payload line(s) after a bad line; skipped",
                b"".join(p_parts)[:EXCERPT],
            )
    if not lines.ended_with_newline:
        on_error(
            "truncated",
            line_at - 1,
            "the file does not end with a newline: it was cut mid-line (the last record may be incomplete)",
            b"",
        )


def _too_large(on_error: ErrorSink, line_no: int, n: int) -> None:
    on_error(
        "payload_too_large",
        line_no,
        f"a payload of {n - 1} lines is larger than {MAX_PAYLOAD >> 20} MiB: its first "
        f"{MAX_PAYLOAD >> 20} MiB are kept (its md5 cannot match), the rest is counted and skipped",
        b"",
    )


def _record(
    line_no: int, n: int, fields: tuple, parts: list[bytes | bytearray], crlf: bool | None
) -> Record:
    payload: bytes | None = None
    if parts:
        raw = bytes(parts[0]) if len(parts) == 1 else b"".join(parts)
        parts.clear()  # the caller's list: its slices go now, not at the next record (one payload copy less)
        # whole lines, each ending in "\n"; each payload line starts with one TAB (unless it lost it)
        raw = raw[1:-1] if raw[:1] == b"\t" else raw[:-1]
        if crlf:
            raw = raw.replace(b"\r\n", b"\n")
            if raw.endswith(b"\r"):
                raw = raw[:-1]
        payload = raw.replace(b"\n\t", b"\n")
    lv, mmdd, tod_us, thread, path, lineno, env = fields
    return Record(line_no, n, lv, mmdd, tod_us, thread, path, lineno, env, payload)

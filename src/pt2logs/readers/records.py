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

Records are yielded as plain tuples (see :data:`Record`) so that a 1 GB file
costs no more Python objects than it has records.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

# glog prefix: level, MMDD, HH:MM:SS, micros, thread, path, lineno. The JSON starts after "] ".
HEADER_RE = re.compile(rb"([VIWEC])(\d{4}) (\d\d):(\d\d):(\d\d)\.(\d{6}) +(\d+) ([^\n]*?):(\d+)\] ")
_LINE_START = re.compile(rb"\n(?!\t)")


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


#: on_error(kind, line_no, message, excerpt)
ErrorSink = Callable[[str, int, str, bytes], None]

EXCERPT = 1024
MAX_LINE = 256 << 20


def iter_records(chunks: Iterable[bytes], on_error: ErrorSink, first_line: int = 1) -> Iterator[Record]:
    """Yield the records of a trace given as an iterable of byte chunks.

    ``chunks`` may cut lines anywhere. ``first_line`` is the line number of the
    first byte (for pieces of a split file). Problems go to ``on_error``;
    nothing here raises on bad input.
    """
    buf = b""
    base_line = first_line  # line number of buf[0]
    crlf: bool | None = None
    pending: list | None = None  # [line_no, header_end_line, header fields..., payload parts]
    scan_from = 0
    ended_with_newline = True

    it = iter(chunks)
    exhausted = False
    while not exhausted:
        chunk = next(it, None)
        if chunk is None:
            exhausted = True
            if not buf:
                break
            ended_with_newline = buf.endswith(b"\n")
            if not ended_with_newline:
                buf += b"\n"
        else:
            if not chunk:
                continue
            buf = buf + chunk if buf else chunk
            if crlf is None:
                nl = buf.find(b"\n")
                if nl < 0 and len(buf) < (1 << 20):
                    continue
                crlf = nl > 0 and buf[nl - 1 : nl] == b"\r"
        # complete lines only: process up to the last newline
        last_nl = buf.rfind(b"\n")
        if last_nl < 0:
            if len(buf) > MAX_LINE:
                on_error("line_too_long", base_line, f"a line longer than {MAX_LINE >> 20} MiB; skipped", buf[:EXCERPT])
                buf = b""
            continue
        # positions of every line start that is not a payload line, in buf[:last_nl+1]
        starts: list[int] = []
        if scan_from == 0 and buf[:1] != b"\t":
            starts.append(0)
        for m in _LINE_START.finditer(buf, max(scan_from - 1, 0), last_nl):
            starts.append(m.start() + 1)
        # the region before the first start belongs to the pending record (or is orphaned)
        line_at = base_line
        pos = 0
        for s in starts:
            if s > pos:
                line_at = _take_payload(buf, pos, s, line_at, pending, on_error, crlf)
                pos = s
            end = buf.find(b"\n", s)
            line = buf[s:end]
            if crlf and line.endswith(b"\r"):
                line = line[:-1]
            if pending is not None and (not line or not _looks_like_header(line)):
                # garbage or an empty line inside a record: the record goes on
                if line:
                    on_error("bad_prefix", line_at, "line is neither a payload line (TAB) nor a glog header; skipped", line[:EXCERPT])
                else:
                    pending[-1].append(b"\n")
                    pending[1] += 1
                line_at += 1
                pos = end + 1
                continue
            if not line:  # blank line between records
                line_at += 1
                pos = end + 1
                continue
            if pending is not None:
                yield from _finish(pending, on_error)
                pending = None
            pending = _open(line, line_at, on_error)
            line_at += 1
            pos = end + 1
        # keep the tail: everything after the last processed line start
        if pos <= last_nl:
            line_at = _take_payload(buf, pos, last_nl + 1, line_at, pending, on_error, crlf)
        buf = buf[last_nl + 1 :]
        base_line = line_at
        scan_from = 0
        if exhausted:
            break
    if pending is not None:
        yield from _finish(pending, on_error)
    if not ended_with_newline:
        on_error("truncated", base_line - 1, "the file does not end with a newline: it was cut mid-line (the last record may be incomplete)", b"")


def _looks_like_header(line: bytes) -> bool:
    return HEADER_RE.match(line) is not None


def _take_payload(buf: bytes, a: int, b: int, line_at: int, pending, on_error: ErrorSink, crlf: bool | None) -> int:
    """Attach buf[a:b] (whole payload lines, ending with a newline) to the pending record."""
    region = buf[a:b]
    n = region.count(b"\n")
    if pending is None:
        if region.strip():
            on_error("orphan_payload", line_at, f"{n} payload line(s) with no header before them; skipped", region[:EXCERPT])
        return line_at + n
    pending[-1].append(region)
    pending[1] += n
    return line_at + n


def _open(line: bytes, line_no: int, on_error: ErrorSink) -> list | None:
    m = HEADER_RE.match(line)
    if m is None:
        on_error("bad_prefix", line_no, "line is not a glog header (LMMDD HH:MM:SS.uuuuuu THREAD FILE:LINE] {json})", line[:EXCERPT])
        # a pseudo-record that swallows any payload lines following the garbage
        return [line_no, 1, None, []]
    lv, mmdd, hh, mi, ss, us, thread, path, lineno = m.groups()
    tod = ((int(hh) * 60 + int(mi)) * 60 + int(ss)) * 1_000_000 + int(us)
    fields = (lv, int(mmdd), tod, int(thread), path, int(lineno), line[m.end() :])
    return [line_no, 1, fields, []]


def _finish(pending: list, on_error: ErrorSink) -> Iterator[Record]:
    line_no, n_lines, fields, parts = pending
    if fields is None:
        if parts:
            on_error("orphan_payload", line_no + 1, f"{n_lines - 1} payload line(s) after a bad header; skipped", b"".join(parts)[:EXCERPT])
        return
    payload: bytes | None = None
    if parts:
        raw = b"".join(parts)
        # each part is whole lines, each ending in "\n"; strip one leading TAB per line
        if raw.endswith(b"\n"):
            raw = raw[:-1]
        if b"\r" in raw:
            raw = raw.replace(b"\r\n", b"\n")
            if raw.endswith(b"\r"):
                raw = raw[:-1]
        payload = raw.replace(b"\n\t", b"\n")
        if payload[:1] == b"\t":
            payload = payload[1:]
    lv, mmdd, tod, thread, path, lineno, env = fields
    yield Record(line_no, n_lines, lv, mmdd, tod, thread, path, lineno, env, payload)

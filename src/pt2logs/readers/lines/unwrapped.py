"""The unwrapping layer in front of the line readers and the text sniffers (:mod:`.framing`).

* :func:`lines_of`: a text capture's lines for :func:`~pt2logs.readers.kit.read_lines`. It looks at the
  first :data:`HEAD` bytes once. A framed one gets the program's lines instead, numbered with the file line
  where each starts, and ``sink.carried`` set to what the wrapping said about the line being read
  (:class:`~.carried.Carried`; None for lines that carried nothing), which the line readers consult. An
  unframed, unprefixed head gets :func:`~pt2logs.readers.bounded.iter_lines`'s lines as they are, watched
  for a collector's framing that starts later (a log a collector appended to or rotated into): one test of
  each line's first byte; a line that may start a framing (an RFC 3339 time, a JSON object, a syslog time)
  has the lines from it on (up to :data:`HEAD` bytes) looked at as a head, and when they are framed the
  rest of the file is unwrapped from that line on (lines of no framing pass through as they are).
* :func:`unwrap_head`: the head as the program wrote it, for the sniffers (``readers.detect``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Any

from pt2logs.readers.bounded import iter_lines
from pt2logs.readers.lines.framing import HEAD_LINES, Found, Unwrap, detect

#: the bytes of a file's head the framing is detected from (the sniffers' head)
HEAD = 64 << 10
#: the first bytes of a line that may start a collector's framing after a plain head: a digit (an RFC 3339 time:
#: CRI, journald's ISO forms, `--timestamps`), ``{`` (a JSON record) or a month's initial (journald's short form);
#: not torch's glog letters (V, I, W, E, C)
_LATER_FIRST = frozenset(bytes([c]) for c in b"0123456789{JFMASOND")
#: such a line, tested before the lines from it on are looked at as a head
_LATER = re.compile(
    rb"\d{4}-\d\d-\d\dT\d\d:\d\d|\{ ?\"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d"
).match


def _peek(chunks: Iterable[bytes]) -> tuple[bytes, Iterator[bytes]]:
    it = iter(chunks)
    first: list[bytes] = []
    size = 0
    for c in it:
        first.append(c)
        size += len(c)
        if size >= HEAD:
            break

    def again() -> Iterator[bytes]:
        yield from first
        yield from it

    return b"".join(first)[:HEAD], again()


def lines_of(chunks: Iterable[bytes], sink: Any) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of a capture as :func:`iter_lines` gives them, the wrapping taken off."""
    head, chunks = _peek(chunks)
    found = detect(head)
    lines = iter_lines(chunks, sink.error)
    return _watched(lines, sink) if found is None else _unwrapped(lines, found, sink)


def _watched(lines: Iterator[tuple[int, bytes]], sink: Any) -> Iterator[tuple[int, bytes]]:
    """The lines of a file whose head has no wrapping, as they are, until a framing starts (then unwrapped
    from the line where it starts on)."""
    first = _LATER_FIRST
    for line_no, raw in lines:
        if raw[:1] in first and _LATER(raw) is not None:
            ahead = [(line_no, raw)]  # the lines from it on, looked at as a head
            size = len(raw)
            for item in lines:
                ahead.append(item)
                size += len(item[1]) + 1
                if size >= HEAD or len(ahead) >= HEAD_LINES:
                    break
            head = b"\n".join(r for _, r in ahead) + b"\n"
            found = detect(head)
            if found is not None and found.framing is not None:
                yield from _unwrapped(chain(ahead, lines), found, sink)
                return
            yield from ahead  # not framed: as they are (not looked at again)
            continue
        yield line_no, raw


def _unwrapped(
    lines: Iterator[tuple[int, bytes]], found: Found, sink: Any
) -> Iterator[tuple[int, bytes]]:
    unwrap = Unwrap(found, lambda kind, line_no, message: sink.warn(kind, line_no, message))
    for line_no, raw in lines:
        if (
            not raw or raw[:1] == b"\n"
        ):  # blank lines of the file (one: b"", a run: newlines): nothing carried
            sink.carried = None
            sink.lines_read = line_no + len(raw)
            yield line_no, raw
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            sink.warn(
                "decode_error",
                line_no,
                f"invalid UTF-8 at byte {e.start}; kept with U+FFFD replacements",
                raw[max(0, e.start - 40) : e.start + 40],
            )
            text = raw.decode("utf-8", "replace")
        for n, inner, carried in unwrap.feed(line_no, text):
            sink.carried = carried
            yield n, inner.encode("utf-8", "surrogatepass")
        sink.lines_read = line_no + len(raw) if raw[:1] == b"\n" else line_no
    for n, inner, carried in unwrap.finish():
        sink.carried = carried
        yield n, inner.encode("utf-8", "surrogatepass")
    sink.carried = None


def unwrap_head(head: bytes) -> tuple[Found | None, bytes]:
    """The head's wrapping and its lines as the program wrote them ((None, head) when it has none)."""
    found = detect(head)
    if found is None:
        return None, head
    lines = head.split(b"\n")
    if not head.endswith(b"\n"):
        lines.pop()  # cut inside a line
    unwrap = Unwrap(found)
    out = [
        inner
        for i, raw in enumerate(lines)
        for _, inner, _ in unwrap.feed(i + 1, raw.rstrip(b"\r").decode("utf-8", "replace"))
    ]
    out += [inner for _, inner, _ in unwrap.finish()]
    return found, "\n".join(out).encode("utf-8", "surrogatepass") + b"\n"

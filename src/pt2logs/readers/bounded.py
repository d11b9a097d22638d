"""Bounded reading, stated once: text lines (:func:`iter_lines`) and whole documents (:func:`whole`),
with the limits that keep any input's memory and CPU bounded (docs/inputs.md, "Limits: hostile
inputs"). :mod:`pt2logs.readers.kit` re-exports every name: readers import them from there."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

#: the longest excerpt of bad input kept in ``ingest_errors``
EXCERPT = 1024
#: the longest TORCH_TRACE line read (records.py skips a longer one: a cut JSON line could not be read)
MAX_LINE = 64 << 20
#: the longest text line kept (see :func:`iter_lines`): the rest of a longer one is skipped and reported
MAX_TEXT_LINE = 1 << 20
#: the most blank lines :func:`iter_lines` hands over as one item
BLANK_RUN = 1 << 20
#: a run of blank lines (LF or CRLF) is ``[\r\n]*\n`` without a lone ``\r`` (a one-character repeat:
#: no regex stack per line, unlike ``(?:\r?\n)+``, which costs ~128 bytes per repetition)
_BLANKS = re.compile(rb"[\r\n]*\n")
_LONE_CR = re.compile(rb"\r(?!\n)")
#: the most of a text document read (graph code, IR, compile_times() text): held as bytes and as text
#: (4 bytes a character when one is outside the BMP), then as an Arrow string: a larger one keeps its
#: first MAX_DOC bytes (whole lines) with a ``too_large`` warning
MAX_DOC = 16 << 20
#: the largest JSON document read whole (counters, Spyre kernel specs and timing records, FFDC reports,
#: pt2logs_run.json): parsed, a JSON document takes up to ~13x its size (a dict of small entries)
MAX_JSON_DOC = 8 << 20

#: on_error(kind, line_no, message, excerpt): how line and record splitters report bad input
ErrorSink = Callable[..., None]


def _cut_at_char(line: bytes, n: int) -> bytes:
    """``line[:n]``, moved back to the start of a UTF-8 character that the cut would split."""
    i = n
    while i > n - 4 and i > 0 and line[i] & 0xC0 == 0x80:
        i -= 1
    return line[:i]


def iter_lines(
    chunks: Iterable[bytes], on_error: ErrorSink, max_line: int = MAX_TEXT_LINE
) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, line without its end of line) for byte chunks cut anywhere.

    * A line longer than ``max_line`` bytes (:data:`MAX_TEXT_LINE` by default) keeps its first
      ``max_line`` bytes (cut at a character boundary); the rest is passed over to its newline at
      ``bytes.find`` speed, never held, and the cut is one ``line_too_long`` warning at that line.
    * A run of ``k`` blank lines is one item: ``b"\n" * (k - 1)`` at the number of its first line (one
      blank line is ``b""``, as always; a run longer than :data:`BLANK_RUN` is several items). Nothing
      else starts with a newline, so ``raw[:1] == b"\n"`` tells the run apart; the numbers of all later
      lines stay right, and a megabyte of newlines costs a regex match, not a million Python lines."""
    buf = b""
    n = 0  # the number of the last line yielded
    skipped = (
        0  # >0: inside an over-long line: its bytes seen so far (its head was yielded as line n)
    )
    head = b""
    blanks = _BLANKS.match

    def cut(total: int, ended: bool = True) -> None:
        on_error(
            "line_too_long",
            n,
            f"a line of {'' if ended else 'at least '}{total:,} bytes: its first "
            f"{max_line >> 10} KiB were kept, the rest skipped (lines are cut at {max_line >> 10} KiB)"
            f"{'' if ended else '; the file ends inside it'}",
            head[:EXCERPT],
            "warning",
        )

    for chunk in chunks:
        if not chunk:
            continue
        if skipped:
            nl = chunk.find(b"\n")
            if nl < 0:
                skipped += len(chunk)
                continue
            skipped += nl
            cut(skipped)
            skipped, head = 0, b""
            chunk = chunk[nl + 1 :]
            if not chunk:
                continue
        buf = buf + chunk if buf else chunk
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            if nl == start or (
                nl == start + 1 and buf[start] == 13
            ):  # a blank line: its whole run at once
                end = blanks(buf, start).end()  # type: ignore[union-attr]
                if (
                    lone := _LONE_CR.search(buf, start, end)
                ) is not None:  # a line of "\r": not blank
                    end = buf.rfind(b"\n", start, lone.start()) + 1
                k = buf.count(b"\n", start, end)
                while k:
                    take = min(k, BLANK_RUN)
                    yield n + 1, b"\n" * (take - 1)
                    n += take
                    k -= take
                start = end
                continue
            n += 1
            line = buf[start:nl]
            if nl - start > max_line:
                head = line
                yield n, _cut_at_char(line, max_line)
                cut(nl - start)
                head = b""
            else:
                yield n, line[:-1] if line.endswith(b"\r") else line
            start = nl + 1
        buf = buf[start:] if start else buf
        if len(buf) > max_line:  # an over-long line whose end is not here yet
            n += 1
            head = buf[:EXCERPT]
            yield n, _cut_at_char(buf, max_line)
            skipped, buf = len(buf), b""
    if skipped:
        cut(skipped, ended=False)
    elif buf:
        n += 1
        yield n, buf[:-1] if buf.endswith(b"\r") else buf


def whole(chunks: Iterable[bytes], max_bytes: int = MAX_DOC) -> bytes | None:
    """All the bytes of a stream, or None as soon as it is larger than ``max_bytes``."""
    parts: list[bytes] = []
    size = 0
    for c in chunks:
        size += len(c)
        if size > max_bytes:
            return None
        parts.append(c)
    return b"".join(parts)

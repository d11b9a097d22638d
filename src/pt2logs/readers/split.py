"""Split one large TORCH_TRACE file into pieces that several processes parse at once.

A piece starts right before a compile begins: a ``chromium_event`` record whose
payload opens the ``dynamo`` span (``"name": "dynamo"`` ... ``"ph": "B"``). At
that point the previous compile has ended (its metrics and spans are closed), so
a piece needs almost nothing from the ones before it:

* its first line number (newlines counted in the prefix: ``bytes.count``, C speed),
* the string table built so far (``{"str": [path, id]}`` records, found with one
  regex pass over the prefix),
* whether the prefix held graph-break / recompile-reason artifacts (older logs
  have neither; the reader then falls back to other fields),
* the last rank an envelope named.

Each of these is a C-level scan of the prefix, done by the piece's own worker,
so it overlaps with the other pieces' parsing. Only uncompressed local files
are split (a compressed stream cannot be entered in the middle).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import orjson

_COMPILE_START = re.compile(rb'\n([VIWEC]\d{4} [^\n]*\] \{"chromium_event": \{\}[^\n]*)\n\t\{\n\t"name": "dynamo",\n')
_STR = re.compile(rb'\] \{"str": \["((?:[^"\\\n]|\\.)*)", (\d+)\]\}')
_RANK = re.compile(rb'"rank": (\d+)')

#: files smaller than this are parsed whole
SPLIT_MIN_BYTES = 96 << 20
#: a piece boundary is searched within this many bytes after the even split point
SEARCH_WINDOW = 64 << 20


@dataclass
class PieceStart:
    """What a piece needs to know about the bytes before it."""

    offset: int
    first_line: int = 1
    strings: dict[int, str] = field(default_factory=dict)
    flags: dict[str, bool] = field(default_factory=dict)
    rank: int | None = None


BLOCK = 16 << 20


def _blocks(f, start: int, end: int):
    """Whole-line blocks of f[start:end] (the last one may end without a newline), read with a fixed
    buffer: no mmap, so the prefix scan does not map hundreds of MB into the process."""
    f.seek(start)
    carry = b""
    pos = start
    while pos < end:
        data = f.read(min(BLOCK, end - pos))
        if not data:
            break
        pos += len(data)
        data = carry + data
        cut = data.rfind(b"\n") + 1
        if cut == 0 and pos < end:
            carry = data
            continue
        if pos >= end:
            cut = len(data)
        yield data[:cut]
        carry = data[cut:]
    if carry:
        yield carry


def split_points(path: str, pieces: int) -> list[int]:
    """Byte offsets where pieces start (0 first); fewer pieces when no safe boundary is found."""
    import os

    size = os.path.getsize(path)
    if pieces <= 1 or size < SPLIT_MIN_BYTES:
        return [0]
    out = [0]
    with open(path, "rb") as f:
        for k in range(1, pieces):
            target = max(size * k // pieces, out[-1] + 1)
            found = None
            base = target
            for block in _blocks(f, target, min(size, target + SEARCH_WINDOW)):
                for m in _COMPILE_START.finditer(block):
                    if b'"ph": "B"' in block[m.end() : m.end() + 400]:
                        found = base + m.start() + 1
                        break
                if found is not None:
                    break
                base += len(block)
            if found is not None and found > out[-1]:
                out.append(found)
    return out


def piece_start(path: str, offset: int) -> PieceStart:
    """Scan the bytes before ``offset`` for the state a piece starting there needs."""
    ps = PieceStart(offset)
    if offset == 0:
        return ps
    lines = 0
    gb = rc = False
    last_rank = None
    with open(path, "rb") as f:
        for block in _blocks(f, 0, offset):
            lines += block.count(b"\n")
            i = block.find(b'] {"str": [')
            while i >= 0:
                m = _STR.match(block, i)
                if m is not None:
                    try:
                        ps.strings[int(m.group(2))] = orjson.loads(b'"' + m.group(1) + b'"')
                    except orjson.JSONDecodeError:
                        ps.strings[int(m.group(2))] = m.group(1).decode("utf-8", "replace")
                i = block.find(b'] {"str": [', i + 10)
            gb = gb or block.find(b'"name": "dynamo_graph_break_reason"') >= 0
            rc = rc or block.find(b'"name": "recompile_reasons"') >= 0
            j = block.rfind(b'"rank": ')
            if j >= 0:
                m = _RANK.match(block, j)
                if m:
                    last_rank = int(m.group(1))
    ps.first_line = lines + 1
    ps.flags = {"gb_artifacts": gb, "recompile_artifacts": rc}
    ps.rank = last_rank
    return ps

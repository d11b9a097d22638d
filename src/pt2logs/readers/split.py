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

import mmap
import re

import orjson
from dataclasses import dataclass, field

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


def split_points(path: str, pieces: int) -> list[int]:
    """Byte offsets where pieces start (0 first); fewer pieces when no safe boundary is found."""
    import os

    size = os.path.getsize(path)
    if pieces <= 1 or size < SPLIT_MIN_BYTES:
        return [0]
    out = [0]
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for k in range(1, pieces):
            target = size * k // pieces
            if target <= out[-1]:
                continue
            m = _COMPILE_START.search(mm, target, min(size, target + SEARCH_WINDOW))
            while m is not None and b'"ph": "B"' not in mm[m.end() : m.end() + 400]:
                m = _COMPILE_START.search(mm, m.end(), min(size, target + SEARCH_WINDOW))
            if m is not None and m.start() + 1 > out[-1]:
                out.append(m.start() + 1)
    return out


def piece_start(path: str, offset: int) -> PieceStart:
    """Scan the bytes before ``offset`` for the state a piece starting there needs."""
    ps = PieceStart(offset)
    if offset == 0:
        return ps
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        ps.first_line = _count(mm, offset) + 1
        i = mm.find(b'] {"str": [', 0, offset)
        while i >= 0:
            m = _STR.match(mm, i)
            if m is not None:
                try:
                    ps.strings[int(m.group(2))] = orjson.loads(b'"' + m.group(1) + b'"')
                except orjson.JSONDecodeError:
                    ps.strings[int(m.group(2))] = m.group(1).decode("utf-8", "replace")
            i = mm.find(b'] {"str": [', i + 10, offset)
        ps.flags["gb_artifacts"] = mm.find(b'"name": "dynamo_graph_break_reason"', 0, offset) >= 0
        ps.flags["recompile_artifacts"] = mm.find(b'"name": "recompile_reasons"', 0, offset) >= 0
        last = mm.rfind(b'"rank": ', 0, offset)
        if last >= 0:
            m = _RANK.match(mm, last)
            ps.rank = int(m.group(1)) if m else None
    return ps


def _count(mm: mmap.mmap, end: int, step: int = 1 << 26) -> int:
    """Newlines in mm[:end], 64 MB at a time (no copy of the whole prefix)."""
    n = 0
    for a in range(0, end, step):
        n += mm[a : min(end, a + step)].count(b"\n")
    return n

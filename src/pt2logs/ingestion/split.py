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
are split (a compressed stream cannot be entered in the middle). The bytes come from
:mod:`pt2logs.inputs.sources` (``local_size``, ``open_local``, ``line_blocks``); nothing here opens a file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

import orjson

from pt2logs.inputs import sources

_COMPILE_START = re.compile(
    rb'\n([VIWEC]\d{4} [^\n]*\] \{"chromium_event": \{\}[^\n]*)\n\t\{\n\t"name": "dynamo",\n'
)
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
#: what scanning a byte of the prefix costs, relative to parsing one (bytes.find + a vectorised newline count
#: against the whole record loop, Parquet writes included; measured ~0.05-0.1 on x86_64): pieces further into
#: the file are made shorter by this much of their offset, so that every worker finishes at about the same time
SCAN_COST = 0.08


def _blocks(f: BinaryIO, start: int, end: int) -> Iterator[tuple[bytearray, int]]:
    """Whole-line blocks of f[start:end] of up to :data:`BLOCK` bytes (see :func:`pt2logs.inputs.sources.line_blocks`)."""
    return sources.line_blocks(f, start, end, BLOCK)


def _targets(size: int, pieces: int, scan_cost: float = SCAN_COST) -> list[int]:
    """Even-cost split points: piece k costs its length plus ``scan_cost`` × its offset (its prefix scan).

    With every piece costing c, the starts follow x[k+1] = (1 - a)·x[k] + c from x[0] = 0, so
    x[k] = c·(1 - (1 - a)^k) / a; c is what makes the last piece end at ``size``.
    """
    if pieces <= 1:
        return []
    a = scan_cost
    r = 1 - a

    def start(k: int, c: float) -> float:
        return c * k if a == 0 else c * (1 - r**k) / a

    c = size / (1 + r * start(pieces - 1, 1.0))  # the last piece: (size - x) + a·x = c
    return [int(start(k, c)) for k in range(1, pieces)]


def _count_newlines(buf: bytearray, n: int) -> int:
    import numpy as np

    return int(np.count_nonzero(np.frombuffer(buf, np.uint8, n) == 10))


def split_points(path: str, pieces: int) -> list[int]:
    """Byte offsets where pieces start (0 first); fewer pieces when no safe boundary is found."""
    size = sources.local_size(path)
    if pieces <= 1 or size < SPLIT_MIN_BYTES:
        return [0]
    out = [0]
    with sources.open_local(path) as f:
        for t in _targets(size, pieces):
            target = max(t, out[-1] + 1)
            found = None
            base = target
            for buf, n in _blocks(f, target, min(size, target + SEARCH_WINDOW)):
                block = bytes(buf[:n])
                for m in _COMPILE_START.finditer(block):
                    if b'"ph": "B"' in block[m.end() : m.end() + 400]:
                        found = base + m.start() + 1
                        break
                if found is not None:
                    break
                base += n
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
    with sources.open_local(path) as f:
        for block, n in _blocks(f, 0, offset):
            lines += _count_newlines(block, n)
            i = block.find(b'] {"str": [', 0, n)
            while i >= 0:
                m = _STR.match(block, i, n)
                if m is not None:
                    try:
                        ps.strings[int(m.group(2))] = orjson.loads(b'"' + m.group(1) + b'"')
                    except orjson.JSONDecodeError:
                        ps.strings[int(m.group(2))] = m.group(1).decode("utf-8", "replace")
                i = block.find(b'] {"str": [', i + 10, n)
            gb = gb or block.find(b'"name": "dynamo_graph_break_reason"', 0, n) >= 0
            rc = rc or block.find(b'"name": "recompile_reasons"', 0, n) >= 0
            j = block.rfind(b'"rank": ', 0, n)
            if j >= 0:
                m = _RANK.match(block, j, n)
                if m:
                    last_rank = int(m.group(1))
    ps.first_line = lines + 1
    ps.flags = {"gb_artifacts": gb, "recompile_artifacts": rc}
    ps.rank = last_rank
    return ps

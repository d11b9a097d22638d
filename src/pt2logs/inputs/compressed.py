"""Compressed streams (gzip, zstd, bz2) decoded with bounded memory, member after member.

:mod:`pt2logs.inputs.sources` opens files; this decodes their stored bytes. Every decompressor call is
bounded to ``limit`` bytes of output (zlib and bz2 ``max_length``; zstd is fed whole blocks, at most
``limit`` bytes of output's worth at a time, found by walking its frame and block headers, since a
block regenerates at most 128 KiB however small it is), so a small file that expands to gigabytes
costs no more memory than a plain one. A file is read whole:

* several members (gzip members, zstd frames, bz2 streams), with zero padding between or after
  them: all read, as one stream (log shippers concatenate and pad);
* bytes after the last complete member that do not start another: every byte decompressed is kept,
  then :class:`TrailingData` says where they start;
* a stream that ends without its end-of-stream marker (a cut file): every byte decompressed is kept,
  then :class:`Truncated`;
* damaged data: the decompressor's own error, after every chunk decompressed before it.

A zstd frame names the window its decoder needs (``zstd --long=N`` writes windows of 2^N bytes, up to
2 GiB). The decoder's memory is the smaller of that window and the output so far, so every window is
accepted (zstd's own default stops at 128 MiB, which reads a ``--long=31`` file as undecodable), but a
frame whose window is larger than :data:`MAX_ZSTD_WINDOW` is read only up to that many bytes of output:
then :class:`WindowTooLarge` says how to read the rest (``zstd -d --long=31``).
"""

from __future__ import annotations

import bz2
import zlib
from collections.abc import Callable, Generator, Iterator
from typing import BinaryIO

_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\x28\xb5\x2f\xfd", "zstd"), (b"BZh", "bz2"))


def _zstd_skippable(head: bytes) -> bool:
    return len(head) >= 4 and head[1:4] == b"\x2a\x4d\x18" and head[0] & 0xF0 == 0x50


def compression_of(head: bytes) -> str:
    if _zstd_skippable(head):
        return "zstd"  # a zstd file may open with a skippable frame (metadata)
    for magic, name in _MAGIC:
        if head.startswith(magic):
            if name == "bz2" and not (len(head) > 3 and head[3:4].isdigit()):
                continue
            return name
    return "none"


class ReadFailed(Exception):
    """An I/O error while reading stored bytes (as opposed to bytes that do not decompress)."""


class Truncated(Exception):
    """The stream ended without its end-of-stream marker, at stored byte ``at``."""

    def __init__(self, kind: str, at: int):
        super().__init__(
            f"the {kind} stream ends at byte {at} without its end-of-stream marker (the file was cut)"
        )
        self.at = at


class WindowTooLarge(Exception):
    """A zstd frame needs a window larger than :data:`MAX_ZSTD_WINDOW`; its first MAX_ZSTD_WINDOW bytes were read."""

    def __init__(self, window: int, at: int):
        log = max(window - 1, 1).bit_length()
        super().__init__(
            f"the zstd frame at stored byte {at} needs a {_size(window)} window (written with zstd --long={log}); "
            f"pt2logs reads such a frame up to {_size(MAX_ZSTD_WINDOW)} of output to keep memory bounded: decompress the "
            f"file with `zstd -d --long={log} FILE` (or `--memory={max(window >> 20, 1)}MB`) and ingest the result"
        )
        self.window, self.at = window, at


def _size(n: int) -> str:
    return (
        f"{n >> 30} GiB"
        if n >= 1 << 30 and not n % (1 << 30)
        else f"{n >> 20} MiB"
        if n >= 1 << 20
        else f"{n} bytes"
    )


class TrailingData(Exception):
    """``n`` bytes from stored byte ``at`` on follow the last complete member and are not another one."""

    def __init__(self, kind: str, at: int, n: int, first: bytes):
        super().__init__(
            f"{n} bytes after the end of the {kind} stream, from byte {at}, are not {kind} data: "
            "not read (everything before them was kept)"
        )
        self.at, self.n, self.first = at, n, first


class StoredBytes:
    """The stored bytes of one file as the decoders take them: each byte goes to ``seen`` (hashing,
    counting) once, when it is first read; bytes read ahead can be put back (:meth:`unread`)."""

    def __init__(self, f: BinaryIO, chunk: int, seen: Callable[[bytes], None]):
        self.f, self.chunk, self.seen = f, chunk, seen
        self.pending = b""
        self.pos = 0  # next byte of pending
        self.offset = 0  # stored bytes handed out (minus those put back): where decoding stands

    def _more(self, n: int) -> bytes:
        try:
            data = self.f.read(n)
        except OSError as e:
            raise ReadFailed(f"read failed at byte {self.offset}: {e}") from e
        if data:
            self.seen(data)
        return data

    def read(self, n: int = 0) -> bytes:
        """Up to ``n`` bytes (default: a chunk); b"" at the end."""
        n = n or self.chunk
        if self.pos < len(self.pending):
            data = self.pending[self.pos : self.pos + n]
            self.pos += len(data)
            if self.pos >= len(self.pending):
                self.pending, self.pos = b"", 0
        else:
            data = self._more(n)
        self.offset += len(data)
        return data

    def read_exact(self, n: int) -> bytes:
        """``n`` bytes, fewer only at the end."""
        data = self.read(n)
        while len(data) < n:
            more = self.read(n - len(data))
            if not more:
                break
            data += more
        return data

    def unread(self, data: bytes) -> None:
        if data:
            self.pending = data + self.pending[self.pos :]
            self.pos = 0
            self.offset -= len(data)

    def peek(self, n: int) -> bytes:
        """The next ``n`` bytes (fewer only at the end), left unread; reads ahead a chunk."""
        have = self.pending[self.pos :]
        while len(have) < n:
            more = self._more(self.chunk)
            if not more:
                break
            have += more
        self.pending, self.pos = have, 0
        return have[:n]

    def skip(self, n: int) -> bool:
        """Pass over ``n`` bytes; False when the file ends first."""
        while n > 0:
            data = self.read(min(n, self.chunk))
            if not data:
                return False
            n -= len(data)
        return True

    def skip_zeros(self) -> None:
        """Pass over zero bytes (padding)."""
        while data := self.read():
            rest = data.lstrip(b"\0")
            if rest:
                self.unread(rest)
                return

    def drain(self) -> bytes:
        """Read to the end (seen, not decoded); the first 64 bytes."""
        first = b""
        while data := self.read():
            if len(first) < 64:
                first += data[: 64 - len(first)]
        return first


#: a member decoder: yields output chunks of at most ``limit`` bytes, returns whether the member ended
#: with its end-of-stream marker (False: the file ended first); input read past its end is put back
Member = Callable[[StoredBytes, int], Generator[bytes, None, bool]]


#: stored bytes fed to zlib / bz2 per call: a fault loses at most this much input's output (a raising
#: call returns nothing) and is placed to within this many bytes
FEED = 64 << 10


def _gzip_member(raw: StoredBytes, limit: int) -> Generator[bytes, None, bool]:
    d = zlib.decompressobj(wbits=31)
    while not d.eof:
        data = raw.read(FEED)
        if not data:
            return False
        while True:
            out = d.decompress(data, limit)
            if out:
                yield out
            data = d.unconsumed_tail
            # the limit was hit: more output may wait in zlib even when all input was taken
            if d.eof or (not data and len(out) < limit):
                break
    raw.unread(d.unused_data)
    return True


def _bz2_member(raw: StoredBytes, limit: int) -> Generator[bytes, None, bool]:
    d = bz2.BZ2Decompressor()
    while not d.eof:
        data = b""
        if d.needs_input:
            data = raw.read(FEED)
            if not data:
                return False
        out = d.decompress(data, limit)
        if out:
            yield out
    raw.unread(d.unused_data)
    return True


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
#: the most one zstd block regenerates (RFC 8878 §3.1.1.2.4)
_ZSTD_BLOCK = 128 << 10
#: zstd's default window limit (``ZSTD_WINDOWLOG_LIMIT_DEFAULT``): the decoder's memory for any frame
#: read whole; a frame with a larger window (``--long=28`` and up) is read up to this much output
MAX_ZSTD_WINDOW = 128 << 20
#: the largest window a zstd frame may name (``ZSTD_WINDOWLOG_MAX`` on 64-bit: 2^31)
_ZSTD_WINDOW_MAX = 1 << 31


def zstd_window(fhd: int, header: bytes) -> int:
    """The window a zstd frame needs, from its frame header descriptor and the header bytes after it
    (RFC 8878 §3.1.1.1.2: a single-segment frame's window is its content size)."""
    single, did = (fhd >> 5) & 1, fhd & 3
    if not single:
        wd = header[0]
        base = 1 << (10 + (wd >> 3))
        return base + (base >> 3) * (wd & 7)
    at = (0, 1, 2, 4)[did]
    fcs = int.from_bytes(header[at:], "little")
    return fcs + 256 if len(header) - at == 2 else fcs


def _zstd_member(raw: StoredBytes, limit: int) -> Generator[bytes, None, bool]:
    """One zstd frame (RFC 8878 §3.1.1: magic, header, blocks, optional checksum), or a skippable frame."""
    import zstandard

    magic = raw.read_exact(4)
    if len(magic) < 4:
        return False
    if _zstd_skippable(magic):
        size = raw.read_exact(4)
        return len(size) == 4 and raw.skip(int.from_bytes(size, "little"))
    fhd = raw.read_exact(1)
    if not fhd:
        return False
    fcs_flag, single, checksum, did = fhd[0] >> 6, (fhd[0] >> 5) & 1, (fhd[0] >> 2) & 1, fhd[0] & 3
    n = (0 if single else 1) + (0, 1, 2, 4)[did] + (single, 2, 4, 8)[fcs_flag]
    header = raw.read_exact(n)
    if len(header) < n:
        return False
    at = raw.offset - 5 - n
    window = zstd_window(fhd[0], header)
    d = zstandard.ZstdDecompressor(
        max_window_size=min(max(window, MAX_ZSTD_WINDOW), _ZSTD_WINDOW_MAX)
    ).decompressobj()
    budget = (
        MAX_ZSTD_WINDOW if window > MAX_ZSTD_WINDOW else None
    )  # output read before WindowTooLarge
    feed = [magic, fhd, header]
    per_call = max(1, limit // _ZSTD_BLOCK)
    blocks = 0
    last = False
    while not last:
        bh = raw.read_exact(3)
        complete = len(bh) == 3
        feed.append(bh)
        if complete:
            v = int.from_bytes(bh, "little")
            last = bool(v & 1)
            want = 1 if (v >> 1) & 3 == 1 else v >> 3  # an RLE block stores one byte
            body = raw.read_exact(want)
            feed.append(body)
            blocks += 1
            complete = len(body) == want
            if complete and last and checksum:
                tail = raw.read_exact(4)
                feed.append(tail)
                complete = len(tail) == 4
        if not complete or last or blocks >= per_call:
            out = d.decompress(b"".join(feed))
            feed, blocks = [], 0
            if budget is not None:
                out, budget = out[:budget], budget - len(out)
            for i in range(0, len(out), limit):
                yield out[i : i + limit]
            if budget is not None and budget < 0:
                raise WindowTooLarge(window, at)
        if not complete:
            return False
    return True


#: kind -> (member decoder, whether a head starts another member)
CODECS: dict[str, tuple[Member, Callable[[bytes], bool]]] = {
    "gzip": (_gzip_member, lambda h: h[:2] == b"\x1f\x8b"),
    "bz2": (_bz2_member, lambda h: compression_of(h) == "bz2"),
    "zstd": (_zstd_member, lambda h: h[:4] == _ZSTD_MAGIC or _zstd_skippable(h)),
}


def decompress(raw: StoredBytes, kind: str, limit: int) -> Iterator[bytes]:
    """Every member of a compressed file, in order, as chunks of at most ``limit`` bytes. Raises
    :class:`Truncated` or :class:`TrailingData` after the last chunk, the decompressor's error on
    damaged data, :class:`ReadFailed` on an I/O error."""
    member, starts = CODECS[kind]
    while True:
        complete = yield from member(raw, limit)
        if not complete:
            raise Truncated(kind, raw.offset)
        at = raw.offset
        raw.skip_zeros()
        head = raw.peek(4)
        if not head:
            return  # the end, maybe after zero padding
        if not starts(head):
            first = raw.drain()
            raise TrailingData(kind, at, raw.offset - at, first)

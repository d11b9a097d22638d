"""Byte sources: local paths and URLs (s3://, gs://, az://, file://), plain or compressed.

Everything that touches input files lives here, so readers only ever see an
iterable of byte chunks. Compression is detected from the first bytes (gzip,
zstd, bz2), not from the file name. Reads are streamed in ``CHUNK`` pieces:
nothing reads a whole file into memory.
"""

from __future__ import annotations

import bz2
import hashlib
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import fsspec

CHUNK = 4 << 20
HEAD = 64 << 10

_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\x28\xb5\x2f\xfd", "zstd"), (b"BZh", "bz2"))
COMPRESSED_SUFFIXES = (".gz", ".zst", ".zstd", ".bz2")


def filesystem(location: str) -> tuple[Any, str]:
    """(fsspec filesystem, path within it) for a local path or URL."""
    fs, path = fsspec.core.url_to_fs(location)
    return fs, path


def is_remote(fs: Any) -> bool:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return protocol not in ("file", "local")


def full_path(fs: Any, path: str) -> str:
    """What users see: the local path, or the URL."""
    return fs.unstrip_protocol(path) if is_remote(fs) else path


def compression_of(head: bytes) -> str:
    for magic, name in _MAGIC:
        if head.startswith(magic):
            if name == "bz2" and not (len(head) > 3 and head[3:4].isdigit()):
                continue
            return name
    return "none"


class _Decompressor:
    def __init__(self, kind: str):
        self.kind = kind
        if kind == "gzip":
            self.d: Any = zlib.decompressobj(wbits=47)  # gzip/zlib auto, handles members one at a time
        elif kind == "zstd":
            import zstandard

            self.d = zstandard.ZstdDecompressor().decompressobj()
        elif kind == "bz2":
            self.d = bz2.BZ2Decompressor()
        else:
            self.d = None

    def feed(self, data: bytes) -> bytes:
        if self.d is None:
            return data
        if self.kind == "gzip":
            out = [self.d.decompress(data)]
            # concatenated gzip members (e.g. appended with `gzip >>`)
            while self.d.unused_data:
                rest = self.d.unused_data
                self.d = zlib.decompressobj(wbits=47)
                out.append(self.d.decompress(rest))
            return b"".join(out)
        if self.kind == "bz2":
            out = [self.d.decompress(data)]
            while self.d.eof and self.d.unused_data:
                rest = self.d.unused_data
                self.d = bz2.BZ2Decompressor()
                out.append(self.d.decompress(rest))
            return b"".join(out)
        return self.d.decompress(data)


@dataclass
class ReadResult:
    """Filled while a file is streamed: what the ``files`` table records."""

    bytes_read: int = 0  # as stored
    content_bytes: int = 0  # after decompression
    sha1: str = ""
    error: str | None = None


def open_binary(fs: Any, path: str) -> BinaryIO:
    return fs.open(path, "rb", block_size=CHUNK) if is_remote(fs) else open(path, "rb")  # noqa: SIM115


def read_head(fs: Any, path: str, n: int = HEAD) -> tuple[bytes, str]:
    """First ``n`` decompressed bytes and the compression, without reading the rest."""
    with open_binary(fs, path) as f:
        raw = f.read(n)
        kind = compression_of(raw)
        if kind == "none":
            return raw, kind
        d = _Decompressor(kind)
        out = bytearray()
        try:
            out += d.feed(raw)
            while len(out) < n:
                more = f.read(n)
                if not more:
                    break
                out += d.feed(more)
        except Exception:  # noqa: BLE001 - a damaged stream: sniff what we have
            pass
        return bytes(out[:n]), kind


def stream_range(path: str, start: int, end: int | None, result: ReadResult, chunk: int = CHUNK) -> Iterator[bytes]:
    """Bytes [start, end) of an uncompressed local file (a piece of a split file), hashed on the way."""
    h = hashlib.sha1()
    try:
        with open(path, "rb") as f:
            f.seek(start)
            left = None if end is None else end - start
            while left is None or left > 0:
                data = f.read(chunk if left is None else min(chunk, left))
                if not data:
                    break
                h.update(data)
                result.bytes_read += len(data)
                result.content_bytes += len(data)
                if left is not None:
                    left -= len(data)
                yield data
    except OSError as e:
        result.error = f"read failed after {result.bytes_read} bytes: {e}"
    finally:
        result.sha1 = h.hexdigest()


def local_size(path: str) -> int:
    return os.path.getsize(path)


def open_local(path: str) -> BinaryIO:
    """An unbuffered handle on a local file, for :func:`line_blocks` (the split scans of a big trace)."""
    return open(path, "rb", buffering=0)  # noqa: SIM115


def line_blocks(f: BinaryIO, start: int, end: int, block: int = CHUNK) -> Iterator[tuple[bytearray, int]]:
    """Whole-line blocks of f[start:end] (the last one may end without a newline): (bytearray, length)
    pairs read into one reused buffer (no mmap, no copies), so a scan over a prefix stays cheap and small.
    A line longer than the buffer grows it."""
    f.seek(start)
    buf = bytearray(block)
    view = memoryview(buf)
    have = 0  # bytes at the front of buf carried over from the previous block (a partial line)
    pos = start
    while True:
        k = f.readinto(view[have : min(len(buf), have + end - pos)]) if pos < end else 0
        pos += k
        n = have + k
        if n == 0:
            return
        if k == 0 or pos >= end:
            yield buf, n
            return
        cut = buf.rfind(b"\n", 0, n) + 1
        if cut == 0:
            if n == len(buf):  # one line longer than the buffer: grow it
                view.release()
                buf.extend(bytes(len(buf)))
                view = memoryview(buf)
            have = n
            continue
        yield buf, cut
        buf[: n - cut] = buf[cut:n]
        have = n - cut


def stream(fs: Any, path: str, result: ReadResult, chunk: int = CHUNK) -> Iterator[bytes]:
    """Yield decompressed chunks of a file; hash and count the stored bytes on the way.

    A decompression or I/O error ends the stream and is recorded in
    ``result.error`` (the caller reports it); the chunks before it stand.
    """
    h = hashlib.sha1()
    try:
        with open_binary(fs, path) as f:
            first = f.read(chunk)
            d = _Decompressor(compression_of(first))
            data = first
            while data:
                h.update(data)
                result.bytes_read += len(data)
                try:
                    out = d.feed(data)
                except Exception as e:  # noqa: BLE001
                    result.error = f"decompression failed after {result.content_bytes} bytes: {e}"
                    return
                if out:
                    result.content_bytes += len(out)
                    yield out
                data = f.read(chunk)
    except OSError as e:
        result.error = f"read failed after {result.bytes_read} bytes: {e}"
    finally:
        result.sha1 = h.hexdigest()

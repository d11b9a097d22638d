"""Byte sources: local paths and URLs (s3://, gs://, az://, file://), plain or compressed.

Everything that touches input files lives here, so readers only ever see an
iterable of byte chunks. Compression is detected from the first bytes (gzip,
zstd, bz2), not from the file name. Reads are streamed in ``CHUNK`` pieces:
nothing reads a whole file into memory.

Compressed input streams with bounded memory whatever its ratio, every member of it is read, and a
cut stream or trailing bytes are recorded (:mod:`pt2logs.inputs.compressed`); the ``ReadResult`` of a file
says what was read and what went wrong. ``bytes_read`` and ``digest`` always cover the whole stored file.

The digest (``files.content_hash``) is XXH3-128 of every stored byte (``xxh3_128:<hex>``, ~20x cheaper
than sha1; the ``xxhash`` package), or sha1 (``<hex>``, as warehouses written before have it) where
``xxhash`` is not installed. Change detection itself never reads a byte: size, mtime and the change
token decide (:mod:`pt2logs.inputs.discover`); the digest records what was read.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

try:
    import xxhash
except ImportError:  # an older environment: sha1, as before (a warehouse may hold both kinds)
    xxhash = None

from pt2logs.inputs.compressed import (
    ReadFailed,
    StoredBytes,
    TrailingData,
    Truncated,
    compression_of,
    decompress,
)
from pt2logs.store.local_files import local_files

CHUNK = 4 << 20
HEAD = 64 << 10

COMPRESSED_SUFFIXES = (".gz", ".zst", ".zstd", ".bz2")


def filesystem(location: str) -> tuple[Any, str]:
    """(filesystem, path within it) for a local path or URL: fsspec's, as ``fsspec.core.url_to_fs`` gives them,
    except for a plain local path, whose filesystem answers what discovery and the readers ask of it
    (``exists``, ``isfile``, ``info``, ``ls``) without importing fsspec (pt2logs.store.local_files: ~0.04 CPU s
    of an ingest's start, and of each pool worker's first file, for asyncio and importlib.metadata)."""
    local = local_files(location)
    if local is not None:
        return local
    import fsspec

    fs, path = fsspec.core.url_to_fs(location)
    return fs, path


def is_remote(fs: Any) -> bool:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return protocol not in ("file", "local")


def full_path(fs: Any, path: str) -> str:
    """What users see: the local path, or the URL."""
    return fs.unstrip_protocol(path) if is_remote(fs) else path


@dataclass
class _Digest:
    """The content digest of one file, fed chunk by chunk."""

    __slots__ = ("h", "prefix")

    def __init__(self) -> None:
        self.h, self.prefix = (
            (xxhash.xxh3_128(), "xxh3_128:") if xxhash is not None else (hashlib.sha1(), "")
        )

    def update(self, data: bytes) -> None:
        self.h.update(data)

    def hexdigest(self) -> str:
        return self.prefix + self.h.hexdigest()


def new_digest() -> _Digest:
    return _Digest()


class ReadResult:
    """Filled while a file is streamed: what the ``files`` table records, and what went wrong."""

    bytes_read: int = 0  # as stored
    content_bytes: int = 0  # after decompression
    digest: str = ""  # content hash of the stored bytes (see the module's doc)
    #: the stream could not be read to its end (what came before stands): message and ingest_errors kind
    #: (``truncated``: a compressed stream without its end marker; ``unreadable``: damaged data, I/O)
    error: str | None = None
    error_kind: str = "unreadable"
    #: the stream was read whole, but bytes after it were not (``trailing_data``): message and excerpt
    warning: str | None = None
    warning_kind: str = "trailing_data"
    warning_excerpt: str = ""


def open_binary(fs: Any, path: str) -> BinaryIO:
    return fs.open(path, "rb", block_size=CHUNK) if is_remote(fs) else open(path, "rb")  # noqa: SIM115


def _stored(
    f: BinaryIO, chunk: int, result: ReadResult | None = None, h: Any = None
) -> tuple[StoredBytes, str]:
    """The file's stored bytes (counted in ``result``, hashed in ``h``) and its compression."""

    def seen(data: bytes) -> None:
        if result is not None:
            result.bytes_read += len(data)
        if h is not None:
            h.update(data)

    raw = StoredBytes(f, chunk, seen)
    return raw, compression_of(raw.peek(4))


def read_head(
    fs: Any, path: str, n: int = HEAD, problem: list[str] | None = None
) -> tuple[bytes, str]:
    """First ``n`` decompressed bytes and the compression, without reading the rest. A compressed
    stream that does not decode (damaged data, a cut member, a zstd window too large) still gives
    whatever decoded before the fault; what went wrong, with its stored offset, goes to ``problem``:
    a file whose head does not decode is an error, never an "empty file"."""
    with open_binary(fs, path) as f:
        raw, kind = _stored(f, n)
        if kind == "none":
            return raw.read(n), kind
        out = bytearray()
        try:
            for data in decompress(raw, kind, n):
                out += data
                if len(out) >= n:
                    break
        except TrailingData:
            pass  # the stream was read whole: the read reports the bytes after it
        except Exception as e:  # noqa: BLE001 - zlib.error, OSError (bz2), ZstdError, EOFError, Truncated, ReadFailed
            if problem is not None:
                problem.append(
                    f"{kind} data does not decode ({e}; stored bytes read: {raw.offset}, "
                    f"bytes decompressed before it: {len(out)})"
                )
        return bytes(out[:n]), kind


def stream_range(
    path: str, start: int, end: int | None, result: ReadResult, chunk: int = CHUNK
) -> Iterator[bytes]:
    """Bytes [start, end) of an uncompressed local file (a piece of a split file), hashed on the way."""
    h = new_digest()
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
        result.digest = h.hexdigest()


def local_size(path: str) -> int:
    return os.path.getsize(path)


def open_local(path: str) -> BinaryIO:
    """An unbuffered handle on a local file, for :func:`line_blocks` (the split scans of a big trace)."""
    return open(path, "rb", buffering=0)  # noqa: SIM115


def line_blocks(
    f: BinaryIO, start: int, end: int, block: int = CHUNK
) -> Iterator[tuple[bytearray, int]]:
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
    """Yield decompressed chunks of at most ``chunk`` bytes; hash and count the stored bytes on the way.

    Nothing raises on bad input: a cut or damaged stream, trailing bytes and I/O errors end up in
    ``result`` (the caller reports them); the chunks before them stand.
    """
    h = new_digest()
    try:
        with open_binary(fs, path) as f:
            raw, kind = _stored(f, chunk, result, h)
            chunks = iter(raw.read, b"") if kind == "none" else decompress(raw, kind, chunk)
            try:
                for data in chunks:
                    result.content_bytes += len(data)
                    yield data
            except Truncated as e:
                result.error = f"truncated: {e}; {result.content_bytes} bytes decompressed"
                result.error_kind = "truncated"
            except TrailingData as e:
                result.warning = str(e)
                result.warning_excerpt = e.first.decode("utf-8", "backslashreplace")
            except ReadFailed:
                raise
            except Exception as e:  # noqa: BLE001 - zlib.error, OSError (bz2), ZstdError, EOFError
                result.error = (
                    f"{kind} data does not decode at or before stored byte {raw.offset} "
                    f"({result.content_bytes} bytes decompressed before it): {e}"
                )
                raw.drain()  # bytes_read and digest cover the whole file
    except ReadFailed as e:
        result.error = str(e)
    except OSError as e:
        result.error = f"read failed after {result.bytes_read} bytes: {e}"
    finally:
        result.digest = h.hexdigest()

"""The worker: parse one task (a file, or a piece of one) into a PartWriter.

This is the only module engines import: a task in, an outcome out (:func:`parse_file` into a writer
the engine keeps for the transaction; :func:`run_tasks`: a group of tasks into a writer of their own).
It knows nothing of transactions, plans or commits; it runs in the parent (in-process engine), in a
pool worker or on a Ray node.
"""

from __future__ import annotations

import gc
import posixpath
import time
import traceback
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pt2logs.ingestion.split import piece_start
from pt2logs.inputs.sources import ReadResult, filesystem, stream, stream_range
from pt2logs.readers import FORMATS
from pt2logs.readers.kit import EXCERPT, FileContext, ReadStats, add_error
from pt2logs.store.payloads import PayloadStore
from pt2logs.store.payloads import enabled as payloads_enabled
from pt2logs.store.warehouse import PartWriter, TxnInfo
from pt2logs.tables import TABLES
from pt2logs.tables.rows import Rows, stamp


@dataclass
class FileTask:
    run_id: str
    url: str
    relpath: str
    fmt: str
    rank: int | None
    mtime: float | None
    size: int
    #: (start, end) byte range when a large file is parsed in pieces (end None = to the end)
    piece: tuple[int, int | None] | None = None

    @property
    def nbytes(self) -> int:
        """Stored bytes this task covers (the whole file, or its piece)."""
        if self.piece is None:
            return self.size
        return (self.piece[1] or self.size) - self.piece[0]


@dataclass
class FileOutcome:
    task: FileTask
    stats: ReadStats
    read: ReadResult
    seconds: float


def memory_pool() -> None:
    """jemalloc with no decay gives freed memory back at once, which keeps peak RSS flat whatever the
    input size (see bench/). This sets what pyarrow's Python layer allocates with; Arrow's C++ default
    (Parquet, compute) is jemalloc too when pt2logs was imported before pyarrow (pt2logs/_alloc.py).
    glibc's malloc (Python, the native passes) keeps the memory it reuses at once (:func:`_malloc_settings`);
    in a process that calls :func:`pt2logs.ingest` in-process, the settings stay for the process."""
    import pyarrow as pa

    _malloc_settings()
    try:
        pool = pa.jemalloc_memory_pool()
        pa.jemalloc_set_decay_ms(0)
    except (NotImplementedError, pa.ArrowNotImplementedError, AttributeError):
        return
    pa.set_memory_pool(pool)


#: glibc's malloc: blocks up to this size come from the heap (its default starts at 128 KB and adapts)
MMAP_THRESHOLD = 32 << 20
#: and free memory at the heap's top is given back to the system only past this much (default 128 KB)
TRIM_THRESHOLD = 32 << 20


def _malloc_settings() -> None:
    """A parse allocates and frees buffers of hundreds of KB to a few MB (file chunks, record groups,
    Arrow columns) all the time; with glibc's defaults each became fresh pages from the kernel (its own
    mmap, or the heap trimmed and grown again) and paid a page fault per 4 KB: 700k faults, ~1.8 s of
    system time, for the 1 GB bench trace in one process. With these two settings the freed memory is
    used again: 420-460k faults, 1.1-1.3 s, peak RSS unchanged within the noise (bench/RESULTS.md).
    Only where glibc's ``mallopt`` exists; elsewhere nothing changes."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(-3, MMAP_THRESHOLD)  # M_MMAP_THRESHOLD (fixed: no longer adapts)
    mallopt(-1, TRIM_THRESHOLD)  # M_TRIM_THRESHOLD


#: the cyclic collector's first threshold while a file is parsed (Python's default: 700 allocations)
GC_GEN0 = 100_000


@contextmanager
def few_collections() -> Iterator[None]:
    """A parse allocates millions of short-lived objects (rows, records) that form no cycles; at the
    default threshold the cyclic collector walked them thousands of times a file (~2 % of an ingest's
    CPU in ``perf``). Reference counting frees them either way; the collector still runs, less often."""
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], GC_GEN0), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def parse_file(info: TxnInfo, task: FileTask, writer: PartWriter) -> FileOutcome:
    """Stream one file through its reader into ``writer``. Never raises on bad input."""
    with few_collections():
        return _parse_file(info, task, writer)


def _parse_file(info: TxnInfo, task: FileTask, writer: PartWriter) -> FileOutcome:
    t0 = time.perf_counter()
    fs, path = filesystem(task.url)
    fmt = FORMATS[task.fmt]
    ctx = FileContext(
        file=task.relpath,
        path=task.url,
        rank=task.rank,
        mtime=task.mtime,
        open_sibling=lambda name: open_sibling(fs, path, name),
    )
    rr = ReadResult()
    stamp_values = {"run_id": task.run_id, "txn": info.txn, "rank": task.rank}
    if task.piece is not None:
        ctx.piece = piece_start(path, task.piece[0])
        chunks = stream_range(path, task.piece[0], task.piece[1], rr)
    else:
        chunks = stream(fs, path, rr)
    err = Rows("ingest_errors")
    batches = fmt.read(chunks, ctx)
    while True:
        try:
            item = next(batches, None)
        except Exception as e:  # noqa: BLE001 - a reader bug or an input nobody foresaw: this file fails alone
            add_error(
                err,
                ctx,
                "reader_failed",
                None,
                f"the {fmt.name} reader stopped: {type(e).__name__}: {str(e)[:300]}; "
                "the rows read before were kept (please report this file)",
                _where(e),
            )
            break
        if item is None:
            break
        table, batch = item
        writer.write(table, stamp(batch, TABLES[table], stamp_values))
    if rr.error:
        add_error(err, ctx, rr.error_kind, None, rr.error + " (rows before this point were kept)")
    if rr.warning:
        add_error(err, ctx, rr.warning_kind, None, rr.warning, rr.warning_excerpt, "warning")
    if len(err):
        writer.write("ingest_errors", stamp(err.take(), TABLES["ingest_errors"], stamp_values))
    return FileOutcome(task, ctx.stats, rr, time.perf_counter() - t0)


def _where(e: BaseException) -> str:
    """The innermost frames of an exception, for the report of a reader that failed."""
    return "".join(traceback.format_exception(type(e), e, e.__traceback__, limit=-4))[-EXCERPT:]


def open_sibling(fs: Any, path: str, name: str) -> Iterable[bytes]:
    """Chunks of the file ``name`` (relative, inside the folder of ``path``), for readers of multi-file
    formats (a tlparse output folder: raw.jsonl + payloads/); FileNotFoundError when there is none."""
    folder = posixpath.dirname(path)
    p = posixpath.normpath(posixpath.join(folder, name))
    if not p.startswith(folder.rstrip("/") + "/") or not fs.isfile(p):
        raise FileNotFoundError(name)
    return stream(fs, p, ReadResult())


def new_writer(info: TxnInfo, tag: str) -> PartWriter:
    """The writer every engine's worker parses into: with the payload store unless it is turned off."""
    return PartWriter(info, tag, payloads=PayloadStore(info) if payloads_enabled() else None)


def run_tasks(info: TxnInfo, tasks: list[FileTask], tag: str) -> list[FileOutcome]:
    """Parse a list of files into one PartWriter of their own (one set of Parquet files per table): a Ray task."""
    memory_pool()
    writer = new_writer(info, tag)
    try:
        out = [parse_file(info, t, writer) for t in tasks]
    except BaseException:
        writer.discard()
        raise
    writer.close()
    return out

"""Where a warehouse's files live, and the writer of a transaction's Parquet files.

:class:`Layout` maps a warehouse location (a folder or an fsspec URL) to paths; :class:`PartWriter` writes one
transaction's rows as large row groups into ``<table>/ingest_date=<day>/part-<txn>-<tag>-<k>.parquet``. It is what pool
workers and Ray tasks use, so it needs no more than a picklable :class:`TxnInfo`. Local files are written as
``*.parquet.tmp`` and renamed when complete; an object store makes an object visible only when its upload completes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (pyarrow loads with the first file written: a query of kept rows needs none)
    import pyarrow as pa
    import pyarrow.parquet as pq

from pt2logs.inputs.sources import filesystem, full_path, is_remote
from pt2logs.store.local_files import local_files
from pt2logs.tables import TABLES

PARTITION = "ingest_date"
ROW_GROUP_ROWS = 1_000_000
#: a row group's bytes in memory: with 16 MB a one-process ingest of 1 GB peaked at 288-311 MiB (Parquet
#: encodes a whole row group's columns at once), with 8 MB at 258-280 MiB, for ~4 % more CPU in Parquet
ROW_GROUP_BYTES = 8 << 20
#: a compaction's row groups (PartWriter ``wide``): 2,048 rows unless 32 MB decoded come first (64 MB: compact past
#: 300 MB; 8 MB made ~250-row ``compilation_metrics`` groups: a 4.4 MB footer at 10,000 runs; RESULTS.md)
COMPACT_ROW_GROUP_ROWS, COMPACT_ROW_GROUP_BYTES = 2048, 32 << 20
FILE_BYTES = 1 << 30
#: a table's buffered batches made one past this many (see PartWriter._coalesce)
COALESCE_BATCHES = 64

#: the payload store (see :mod:`pt2logs.store.payloads`): each distinct long text once per warehouse, keyed
#: by the XXH3-128 of its bytes; the row's file holds the key, the views join
PAYLOADS = "payloads"
PAYLOAD_KEY = "payload_key"
KEY_BYTES = 16  # (a key's Arrow type: binary of these bytes)
#: the columns whose long texts go to the store: table -> ((text column, key column), ...): ``events``
#: payloads (graphs, guards, output code: the same in every rank and run of a model) and the
#: ``compile_phases`` args (chromium events' args: a compile's configs, ~45 % of a GPU trace's bytes,
#: repeated by every compile). Each costs every query of its table a join with the store's keys
#: (DuckDB keeps the join when the text is not read; it then reads only the keys), so not the configs
#: of ``compilation_metrics``, which most queries read, though in 8 MB row groups of a few hundred rows
#: its ~110 columns cost a column chunk each nine times per 300 logs (0.25 s of Parquet there).
STORED: dict[str, tuple[tuple[str, str], ...]] = {
    "events": (("payload", PAYLOAD_KEY),),
    "compile_phases": (("args", "args_key"),),
}


def stored_tables() -> list[str]:
    """Every folder of Parquet files a transaction may write: the declared tables and the store."""
    return [*TABLES, PAYLOADS]


def file_schema(table: str) -> pa.Schema:
    """The schema of ``table``'s files: the declared one; a table of :data:`STORED` also holds the key."""
    import pyarrow as pa

    if table == PAYLOADS:
        meta = {b"pt2logs.table": PAYLOADS.encode(), b"pt2logs.schema_version": b"1"}
        return pa.schema(
            [
                pa.field(PAYLOAD_KEY, pa.binary(KEY_BYTES)),
                pa.field("payload", pa.string()),
                pa.field("txn", pa.string()),
            ],
            metadata=meta,
        )
    schema = TABLES[table].schema
    for _, key in STORED.get(table, ()):
        schema = schema.append(pa.field(key, pa.binary(KEY_BYTES)))
    return schema


@dataclass(frozen=True)
class TxnInfo:
    """What a worker process needs to write into a transaction (picklable)."""

    location: str
    txn: str
    ingest_date: str


class Layout:
    """A warehouse location: its filesystem, its root and the paths under it."""

    def __init__(self, location: str):
        self.location = location
        # a local warehouse: fsspec imported only for what a query never asks (store/local_files.py)
        self.fs, self.root = local_files(location) or filesystem(location)
        self.remote = is_remote(self.fs)
        if not self.remote:
            self.root = os.path.abspath(self.root)

    def path(self, *parts: str) -> str:
        return posixpath.join(self.root, *parts) if self.remote else os.path.join(self.root, *parts)

    def url(self, *parts: str) -> str:
        return full_path(self.fs, self.path(*parts))

    def rel(self, path: str) -> str:
        """``path`` relative to the root, with ``/`` separators (how the ``_gc`` records name files)."""
        root = self.root.rstrip("/") + "/"
        p = path.replace(os.sep, "/") if not self.remote else path
        return p[len(root) :] if p.startswith(root) else p


def found(lay: Layout, prefix: str = "", keep: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """An object store's keys under the warehouse that start with ``prefix`` (``runs/``, ``_``; "" for all):
    path -> info, from one recursive listing (s3fs pages it, 1,000 keys a request), its cache of listings
    dropped first (other processes write here). No per-folder requests: an empty result is {} (only the
    whole warehouse, when empty, costs a HEAD too). s3fs keeps a whole-warehouse listing (not a prefix's):
    only the folders ``keep``'s stay (DuckDB's opens of their files then ask no HEAD), so that a later
    ``info``/``exists``/``ls`` elsewhere under the root still asks the store."""
    fs = lay.fs
    fs.invalidate_cache()
    if prefix:
        return fs.find(lay.root, prefix=prefix, detail=True)
    try:
        return fs.find(lay.root, detail=True)
    except FileNotFoundError:
        return {}
    finally:
        root, kept = lay.root.rstrip("/") + "/", set(keep)
        for k in list(fs.dircache):
            if not (k.startswith(root) and k[len(root) :].split("/", 1)[0] in kept):
                del fs.dircache[k]


#: text columns worth min/max statistics (short, filtered on); long text (payloads, JSON) gets none
_STATS_TEXT = frozenset(
    (  # noqa: SIM905 - a word list: 29 names on 3 lines, not 29
        "run_id txn compile_id event_type artifact_name source file phase stage cause gb_id gb_type "
        "kernel_name backend kind name format path relpath category cache outcome op co_name severity "
        "artifact level direction dtype"
    ).split()
)


#: dictionary pages larger than Parquet's 1 MB default: an ``events`` row group's envelopes repeat (every
#: record of a frame carries its stack) but their distinct texts pass 1 MB, and past the limit the writer
#: abandons the dictionary for plain pages: slower to write and ~40 % larger
_DICT_BYTES = {"events": 8 << 20}


def _stats_columns(table: str) -> list[str]:
    if table == PAYLOADS:
        return ["txn"]
    return [
        c.name
        for c in TABLES[table].columns
        if c.kind not in ("str", "json", "list<str>") or c.name in _STATS_TEXT
    ]


def txn_of(path: str) -> str | None:
    """The transaction id in a data file's name (``part-<txn>-<writer>-<k>.parquet``)."""
    name = posixpath.basename(path)
    if not name.startswith("part-"):
        return None
    parts = name[5:].split("-")
    return "-".join(parts[:3]) if len(parts) >= 4 else None


def _tell(fh: Any) -> int:
    """Bytes written to an open file so far (0 when it cannot say)."""
    try:
        return int(fh.tell())
    except Exception:  # noqa: BLE001
        return 0


class NoSpace(OSError):
    """The disk filled while writing ``path`` (``written``: bytes this writer had written to its files)."""

    def __init__(self, path: str, written: int):
        super().__init__(errno.ENOSPC, "No space left on device", path)
        self.written = written

    def __reduce__(self) -> tuple[Any, ...]:  # crosses from a worker process to the driver
        return NoSpace, (self.filename, self.written)


class PartWriter:
    """Buffers batches per table and writes them as large row groups into the txn's files.

    With ``payloads`` (a :class:`pt2logs.store.payloads.PayloadStore`), the long texts of :data:`STORED`
    go to the store (each distinct one once) and the rows keep their key; without, they stay in their rows."""

    def __init__(self, info: TxnInfo, tag: str, payloads: Any = None, wide: bool = False):
        self.info, self.wide = info, wide  # (wide: a compaction's, row groups of more rows)
        self.tag = tag
        self.payloads = payloads
        self.wh = Layout(info.location)
        self._buf: dict[str, list[pa.RecordBatch]] = {}
        self._rows: dict[str, int] = {}
        self._bytes: dict[str, int] = {}
        self._writers: dict[str, tuple[pq.ParquetWriter, Any, str, str, int]] = {}
        self._seq = 0
        self._done_bytes = 0
        self.written: list[str] = []
        self._meta: dict[str, dict[bytes, bytes]] = {}

    def set_metadata(self, table: str, meta: dict[bytes, bytes]) -> None:
        """Key-value metadata added to ``table``'s files written from now on (a runs file's commit record)."""
        self._meta[table] = meta

    def _schema(self, table: str) -> pa.Schema:
        schema = file_schema(table)
        extra = self._meta.get(table)
        return schema.with_metadata({**(schema.metadata or {}), **extra}) if extra else schema

    def write(self, table: str, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        for text, key in STORED.get(table, ()):
            if key in batch.schema.names:  # (a compaction copies rows with their keys)
                continue
            if self.payloads is not None:
                batch, stored = self.payloads.split(batch, text, key)
                if stored is not None:
                    self.write(PAYLOADS, stored)
            else:
                import pyarrow as pa

                batch = batch.append_column(key, pa.nulls(batch.num_rows, pa.binary(KEY_BYTES)))
        self._buf.setdefault(table, []).append(batch)
        self._rows[table] = self._rows.get(table, 0) + batch.num_rows
        # the buffers' sizes (a slice counts whole: at most an earlier flush); nbytes walks every value's extent
        self._bytes[table] = self._bytes.get(table, 0) + batch.get_total_buffer_size()
        # merged at every 64th (after a merge that could not be made, 64 batches later)
        if len(self._buf[table]) % COALESCE_BATCHES == 0:
            self._coalesce(table)
        # (a compaction's hold more rows; not the store's: its texts are read by row number, a row group at a time)
        grow = self.wide and table != PAYLOADS and self._rows[table] < COMPACT_ROW_GROUP_ROWS
        limit = COMPACT_ROW_GROUP_BYTES if grow else ROW_GROUP_BYTES
        if self._rows[table] >= ROW_GROUP_ROWS or self._bytes[table] >= limit:
            self.flush(table)

    def flush(self, table: str) -> None:
        """``table``'s buffered rows written now (a compaction done with a table: not held during the next)."""
        try:
            self._flush(table)
        except OSError as e:
            if e.errno == errno.ENOSPC and not isinstance(e, NoSpace):
                raise self._no_space(e) from None
            raise

    def _coalesce(self, table: str) -> None:
        """A table's buffered batches as one: a worker parsing thousands of small files buffered each table's few
        rows a file as thousands of small buffers, alive until the table's row group is full while the other tables'
        came and went, and its RSS grew with the files parsed (allocator pages held by a few live buffers: 165 → 212
        MB over 1,200 sample traces with a flat Arrow pool; 165 → ~185 coalesced every 64 batches)."""
        import pyarrow as pa

        buf = self._buf[table]
        if any(not b.schema.equals(buf[0].schema) for b in buf):
            return
        one = pa.Table.from_batches(buf).combine_chunks().to_batches()
        if len(one) == 1:
            self._buf[table] = one
            self._bytes[table] = one[0].get_total_buffer_size()

    def write_table(self, table: str, data: pa.Table) -> None:
        for b in data.to_batches():
            self.write(table, b)

    def _flush(self, table: str) -> None:
        batches = self._buf.pop(table, [])
        self._rows.pop(table, None)
        nbytes = self._bytes.pop(table, 0)
        if not batches:
            return
        # secret shapes out of every text column (pt2logs.redaction.masking), a row group at a time; a text the store
        # keeps is scrubbed once, as the store's new row. (Imported here: a warehouse's reader never needs them.)
        import pyarrow as pa

        from pt2logs.redaction.masking import scrub_batches

        batches = scrub_batches(
            batches, skip={t for t, _ in STORED.get(table, ())} if self.payloads is not None else ()
        )
        schema = self._schema(table)
        data = pa.Table.from_batches(batches, schema=schema)
        w = self._writers.get(table)
        if w is not None and w[4] >= FILE_BYTES:
            self._close_one(table)
            w = None
        if w is None:
            w = self._open(table, schema)
        writer, fh, tmp, final, size = w
        writer.write_table(data, row_group_size=max(data.num_rows, 1))
        self._writers[table] = (writer, fh, tmp, final, size + nbytes)

    def _open(self, table: str, schema: pa.Schema) -> tuple[pq.ParquetWriter, Any, str, str, int]:
        self._seq += 1
        part = f"{PARTITION}={self.info.ingest_date}"
        name = f"part-{self.info.txn}-{self.tag}-{self._seq}.parquet"
        folder = self.wh.path(table, part)
        self.wh.fs.makedirs(folder, exist_ok=True)
        final = self.wh.path(table, part, name)
        tmp = final if self.wh.remote else final + ".tmp"
        fh = self.wh.fs.open(tmp, "wb")
        import pyarrow.parquet as pq  # (here: the query side reads the layout, never writes Parquet)

        writer = pq.ParquetWriter(
            fh,
            schema,
            compression="zstd",
            compression_level=1,
            write_statistics=_stats_columns(table),
            use_dictionary=True,
            dictionary_pagesize_limit=_DICT_BYTES.get(table, 1 << 20),
        )
        w = (writer, fh, tmp, final, 0)
        self._writers[table] = w
        return w

    def _close_one(self, table: str) -> None:
        writer, fh, tmp, final, _ = self._writers[table]
        writer.close()
        size = _tell(fh)
        fh.close()
        del self._writers[table]
        self._done_bytes += size
        if tmp != final:
            os.replace(tmp, final)
        self.written.append(final)

    def touch(self, table: str) -> None:
        """Make sure ``table`` gets a file, even one without rows (a compaction's ``runs`` file, the
        commit point of the payloads it copied when no run of its partition is live)."""
        if table not in self._writers and table not in self._buf:
            self._open(table, self._schema(table))

    def close(self) -> list[str]:
        try:
            for table in list(self._buf):
                self._flush(table)
            for table in list(self._writers):
                self._close_one(table)
        except BaseException as e:
            err = (
                self._no_space(e)
                if isinstance(e, OSError) and e.errno == errno.ENOSPC and not isinstance(e, NoSpace)
                else None
            )
            self.discard()  # no half-written file left open (and no ParquetWriter.__del__ noise at exit)
            if err is not None:
                raise err from None
            raise
        return self.written

    def _no_space(self, e: OSError) -> OSError:
        """A full disk as one clear error: the file being written, and how much this writer wrote."""
        path = e.filename or next((w[2] for w in self._writers.values()), None) or self.wh.path()
        return NoSpace(path, sum(_tell(w[1]) for w in self._writers.values()) + self._done_bytes)

    def discard(self) -> None:
        """Drop the files not closed yet (a failed or killed write: nothing of them is committed). Each
        step on its own: on a full disk the writer's close fails, and its file is still removed."""
        for table in list(self._writers):
            writer, fh, tmp, final, _ = self._writers.pop(table)
            with contextlib.suppress(Exception):
                writer.close()
            writer.is_open = False  # a close that failed is not tried again (and logged) by ParquetWriter.__del__
            with contextlib.suppress(Exception):
                fh.close()
            with contextlib.suppress(Exception):
                self.wh.fs.rm(tmp)
        self._buf.clear()

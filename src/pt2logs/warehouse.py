"""The warehouse: the only code that writes Parquet.

Layout (a local folder or an object-store prefix)::

    <wh>/_meta.json                         warehouse format version
    <wh>/_txn/<txn>.json                    open transactions (deleted at commit)
    <wh>/<table>/ingest_date=YYYY-MM-DD/part-<txn>-<worker>-<k>.parquet
    <wh>/pt2logs.duckdb                     DuckDB views over all of it (for the DuckDB CLI / BI tools)

Partitioning is by ingest date: runs are appended daily, a run is always
ingested after it started, so ``ingest_date >= since`` prunes partitions for
``--since`` queries without ever dropping a run that started later.

**Commit protocol.** An ingest is a sequence of transactions (a few runs
each). A transaction writes its data files under unique names, then its
``files`` rows, then its ``runs`` rows: writing the ``runs`` file is the
commit point. Every row carries ``txn``; the views keep, for each run, only
the transaction with the newest ``committed_at`` in ``runs`` (so a run that is
ingested again replaces its old rows, and files of a transaction killed before
its commit are never visible). ``pt2logs compact`` rewrites partitions
without the dead rows. A killed transaction's files are deleted by the next
writer (its ``_txn`` marker is no longer locked by a live process).

Local writes go to ``*.parquet.tmp`` and are renamed when complete; object
stores make an object visible only when its upload completes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import posixpath
import secrets
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

import pt2logs.tables  # noqa: F401  (registers every table)
from pt2logs.schema import TABLES, WAREHOUSE_FORMAT
from pt2logs.sources import filesystem, full_path, is_remote

DEFAULT_WAREHOUSE = "./pt2logs_warehouse"
PARTITION = "ingest_date"
ROW_GROUP_ROWS = 1_000_000
ROW_GROUP_BYTES = 16 << 20
FILE_BYTES = 1 << 30
STALE_REMOTE_TXN_S = 6 * 3600


class WarehouseError(Exception):
    pass


def new_txn_id(now: dt.datetime | None = None) -> str:
    now = now or dt.datetime.now(dt.timezone.utc)
    return f"{now:%Y%m%dT%H%M%S%f}-{os.getpid()}-{secrets.token_hex(3)}"


@dataclass(frozen=True)
class TxnInfo:
    """What a worker process needs to write into a transaction (picklable)."""

    location: str
    txn: str
    ingest_date: str


class Warehouse:
    def __init__(self, location: str = DEFAULT_WAREHOUSE):
        self.location = location
        self.fs, self.root = filesystem(location)
        self.remote = is_remote(self.fs)
        if not self.remote:
            self.root = os.path.abspath(self.root)

    # ------------------------------------------------------------------ layout
    def path(self, *parts: str) -> str:
        return posixpath.join(self.root, *parts) if self.remote else os.path.join(self.root, *parts)

    def url(self, *parts: str) -> str:
        return full_path(self.fs, self.path(*parts))

    def exists(self) -> bool:
        return self.fs.exists(self.path("_meta.json"))

    def init(self) -> None:
        meta_path = self.path("_meta.json")
        if self.fs.exists(meta_path):
            with self.fs.open(meta_path, "rb") as f:
                meta = orjson.loads(f.read())
            if int(meta.get("format", 0)) > WAREHOUSE_FORMAT:
                raise WarehouseError(
                    f"{self.location} was written by a newer pt2logs (warehouse format {meta.get('format')}); upgrade pt2logs")
            return
        self.fs.makedirs(self.root, exist_ok=True)
        self.fs.makedirs(self.path("_txn"), exist_ok=True)
        self._write_bytes(meta_path, orjson.dumps({"format": WAREHOUSE_FORMAT, "created_at": time.time()}))

    def _write_bytes(self, path: str, data: bytes) -> None:
        if self.remote:
            with self.fs.open(path, "wb") as f:
                f.write(data)
            return
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)

    def table_files(self, table: str) -> list[str]:
        base = self.path(table)
        if not self.fs.exists(base):
            return []
        return sorted(p for p in self.fs.find(base) if p.endswith(".parquet"))

    # ------------------------------------------------------------------ locking
    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Exclusive lock for maintenance (recovery, compaction, the views file). Local only."""
        if self.remote:
            yield
            return
        import fcntl

        os.makedirs(self.root, exist_ok=True)
        with open(self.path("_lock"), "a+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    # ------------------------------------------------------------------ transactions
    def begin(self) -> Txn:
        return Txn(self)

    def recover(self) -> list[str]:
        """Delete the files of transactions whose writer died before committing (and, locally, the
        temporary files a killed writer of the views file left; callers hold the lock)."""
        removed = []
        if not self.remote and os.path.isdir(self.root):
            for name in os.listdir(self.root):
                if name.endswith(".tmp"):
                    with contextlib.suppress(OSError):
                        os.remove(self.path(name))
        txn_dir = self.path("_txn")
        if not self.fs.exists(txn_dir):
            return removed
        for marker in self.fs.ls(txn_dir, detail=False):
            name = posixpath.basename(marker)
            if not name.endswith(".json"):
                continue
            txn = name[: -len(".json")]
            if not self._is_dead(marker):
                continue
            for table in TABLES:
                for p in self.table_files(table) + self._tmp_files(table):
                    if f"part-{txn}-" in posixpath.basename(p):
                        self.fs.rm(p)
                        removed.append(p)
            with contextlib.suppress(FileNotFoundError):
                self.fs.rm(marker)
        return removed

    def _tmp_files(self, table: str) -> list[str]:
        base = self.path(table)
        if self.remote or not os.path.isdir(base):
            return []
        return [os.path.join(d, f) for d, _, fs in os.walk(base) for f in fs if f.endswith(".tmp")]

    def _is_dead(self, marker: str) -> bool:
        if self.remote:
            info = self.fs.info(marker)
            mt = info.get("LastModified") or info.get("mtime")
            ts = mt.timestamp() if hasattr(mt, "timestamp") else float(mt or 0)
            return time.time() - ts > STALE_REMOTE_TXN_S
        import fcntl

        try:
            with open(marker, "rb") as f:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return False
                fcntl.flock(f, fcntl.LOCK_UN)
                return True
        except FileNotFoundError:
            return False


class Txn:
    """One transaction: data files from any number of workers, then files + runs rows."""

    def __init__(self, wh: Warehouse):
        self.wh = wh
        now = dt.datetime.now(dt.timezone.utc)
        self.started = now
        self.info = TxnInfo(wh.location, new_txn_id(now), now.strftime("%Y-%m-%d"))
        self.id = self.info.txn
        self._marker = wh.path("_txn", f"{self.id}.json")
        self._lockf: Any = None
        wh.fs.makedirs(wh.path("_txn"), exist_ok=True)
        body = orjson.dumps({"txn": self.id, "pid": os.getpid(), "host": socket.gethostname(), "started": now.isoformat()})
        if wh.remote:
            wh._write_bytes(self._marker, body)
        else:
            import fcntl

            self._lockf = open(self._marker, "wb")  # noqa: SIM115 - held for the txn's lifetime
            fcntl.flock(self._lockf, fcntl.LOCK_EX)
            self._lockf.write(body)
            self._lockf.flush()

    def writer(self, tag: str = "main") -> PartWriter:
        return PartWriter(self.info, tag)

    def commit(self, files: pa.Table | None, runs: pa.Table) -> None:
        """Write the ``files`` rows, then the ``runs`` rows (the commit point).

        Under the warehouse lock, so a commit is ordered after a running compaction
        (its ``committed_at`` is then the newer one, and wins)."""
        with self.wh.lock():
            self._commit(files, runs)

    def _commit(self, files: pa.Table | None, runs: pa.Table) -> None:
        w = PartWriter(self.info, "commit")
        if files is not None and files.num_rows:
            w.write_table("files", files)
        w.close()
        w = PartWriter(self.info, "commit")
        runs = runs.set_column(runs.schema.get_field_index("committed_at"), "committed_at",
                               pa.array([dt.datetime.now(dt.timezone.utc)] * runs.num_rows, type=TABLES["runs"].column("committed_at").type))
        w.write_table("runs", runs)
        w.close()
        self._release(delete=True)

    def abort(self) -> None:
        """Forget this transaction: its files are removed now (or by the next recover)."""
        self._release(delete=False)
        with contextlib.suppress(Exception):
            self.wh.recover()

    def _release(self, delete: bool) -> None:
        if self._lockf is not None:
            import fcntl

            fcntl.flock(self._lockf, fcntl.LOCK_UN)
            self._lockf.close()
            self._lockf = None
        if delete:
            with contextlib.suppress(FileNotFoundError):
                self.wh.fs.rm(self._marker)


#: text columns worth min/max statistics (short, filtered on); long text (payloads, JSON) gets none
_STATS_TEXT = {"run_id", "txn", "compile_id", "event_type", "artifact_name", "source", "file", "phase", "stage",
               "cause", "gb_id", "gb_type", "kernel_name", "backend", "kind", "name", "format", "path", "relpath",
               "category", "cache", "outcome", "op", "co_name", "severity", "artifact", "level", "direction", "dtype"}


def _stats_columns(table: str) -> list[str]:
    return [c.name for c in TABLES[table].columns if c.kind not in ("str", "json", "list<str>") or c.name in _STATS_TEXT]


def txn_of(path: str) -> str | None:
    """The transaction id in a data file's name (``part-<txn>-<writer>-<k>.parquet``)."""
    name = posixpath.basename(path)
    if not name.startswith("part-"):
        return None
    parts = name[5:].split("-")
    return "-".join(parts[:3]) if len(parts) >= 4 else None


class PartWriter:
    """Buffers batches per table and writes them as large row groups into the txn's files."""

    def __init__(self, info: TxnInfo, tag: str):
        self.info = info
        self.tag = tag
        self.wh = Warehouse(info.location)
        self._buf: dict[str, list[pa.RecordBatch]] = {}
        self._rows: dict[str, int] = {}
        self._bytes: dict[str, int] = {}
        self._writers: dict[str, tuple[pq.ParquetWriter, Any, str, str, int]] = {}
        self._seq = 0
        self.written: list[str] = []

    def write(self, table: str, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        self._buf.setdefault(table, []).append(batch)
        self._rows[table] = self._rows.get(table, 0) + batch.num_rows
        self._bytes[table] = self._bytes.get(table, 0) + batch.nbytes
        if self._rows[table] >= ROW_GROUP_ROWS or self._bytes[table] >= ROW_GROUP_BYTES:
            self._flush(table)

    def write_table(self, table: str, data: pa.Table) -> None:
        for b in data.to_batches():
            self.write(table, b)

    def _flush(self, table: str) -> None:
        batches = self._buf.pop(table, [])
        self._rows.pop(table, None)
        self._bytes.pop(table, None)
        if not batches:
            return
        schema = TABLES[table].schema
        data = pa.Table.from_batches(batches, schema=schema)
        w = self._writers.get(table)
        if w is not None and w[4] >= FILE_BYTES:
            self._close_one(table)
            w = None
        if w is None:
            w = self._open(table, schema)
        writer, fh, tmp, final, size = w
        writer.write_table(data, row_group_size=max(data.num_rows, 1))
        self._writers[table] = (writer, fh, tmp, final, size + data.nbytes)

    def _open(self, table: str, schema: pa.Schema) -> tuple[pq.ParquetWriter, Any, str, str, int]:
        self._seq += 1
        part = f"{PARTITION}={self.info.ingest_date}"
        name = f"part-{self.info.txn}-{self.tag}-{self._seq}.parquet"
        folder = self.wh.path(table, part)
        self.wh.fs.makedirs(folder, exist_ok=True)
        final = self.wh.path(table, part, name)
        tmp = final if self.wh.remote else final + ".tmp"
        fh = self.wh.fs.open(tmp, "wb")
        writer = pq.ParquetWriter(fh, schema, compression="zstd", compression_level=1,
                                  write_statistics=_stats_columns(table), use_dictionary=True)
        w = (writer, fh, tmp, final, 0)
        self._writers[table] = w
        return w

    def _close_one(self, table: str) -> None:
        writer, fh, tmp, final, _ = self._writers.pop(table)
        writer.close()
        fh.close()
        if tmp != final:
            os.replace(tmp, final)
        self.written.append(final)

    def close(self) -> list[str]:
        for table in list(self._buf):
            self._flush(table)
        for table in list(self._writers):
            self._close_one(table)
        return self.written

    def discard(self) -> None:
        for table in list(self._writers):
            writer, fh, tmp, final, _ = self._writers.pop(table)
            with contextlib.suppress(Exception):
                writer.close()
                fh.close()
                self.wh.fs.rm(tmp)
        self._buf.clear()

"""The warehouse: the only code that writes Parquet.

Layout (a local folder or an object-store prefix)::

    <wh>/_meta.json                         warehouse format version
    <wh>/_lock                              the warehouse lock (local: flock; remote: a lease object)
    <wh>/_txn/<txn>.json                    open transactions (local: flock held; remote: a lease)
    <wh>/_gc/<txn>.json                     files a compaction replaced, deleted after a grace period
    <wh>/_outcomes/<key>/<txn>.pq      a committed transaction's runs' outcomes (pt2logs.query.kept_rows)
    <wh>/_advice/<key>/<txn>.pq        and their advice items (pt2logs.query.kept_rows)
    <wh>/_answers/<key>/<txn>.pq       the answers about those of its runs that were read, kept after the read
    <wh>/_answers/<key>/<txn>.runs/    a transaction of more than 64 runs: a file per run read
                                            (pt2logs.query.answer_keeper)
    <wh>/<table>/ingest_date=YYYY-MM-DD/part-<txn>-<worker>-<k>.parquet
    <wh>/pt2logs.duckdb                     DuckDB views over all of it (for the DuckDB CLI / BI tools)

Partitioning is by ingest date: runs are appended daily, a run is always
ingested after it started, so ``ingest_date >= since`` prunes partitions for
``--since`` queries without ever dropping a run that started later.

**Commit protocol.** An ingest is a sequence of transactions (a few runs
each). A transaction creates its marker, writes its data files under unique
names, then (under the warehouse lock) its ``files`` rows and its ``runs``
rows: the ``runs`` file is the commit point, and a transaction is committed
exactly when its ``runs`` file exists. Only then is its marker removed. Every
row carries ``txn``; the views keep, for each run, only the transaction with
the newest ``committed_at`` in ``runs`` (so a run that is ingested again
replaces its old rows, and files of a transaction killed before its commit are
never visible). ``pt2logs compact`` rewrites partitions without the dead rows
(see :mod:`pt2logs.store.compact`); recovery rules: :mod:`pt2logs.store.recovery`; locks
and leases: :mod:`pt2logs.store.lease`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:  # (pyarrow loads with a commit: a query of kept rows needs none)
    import pyarrow as pa

from pt2logs.store import DEFAULT_WAREHOUSE, faults, manifest, recovery
from pt2logs.store.lease import (
    Heartbeat,
    LeaseLost,
    LocalLock,
    RemoteLock,
    head,
    lease_s,
    put_if,
    put_new,
)
from pt2logs.store.parts import (  # noqa: F401  (re-exported: the writer side of the warehouse)
    FILE_BYTES,
    PARTITION,
    PAYLOAD_KEY,
    PAYLOADS,
    ROW_GROUP_BYTES,
    ROW_GROUP_ROWS,
    STORED,
    Layout,
    PartWriter,
    TxnInfo,
    txn_of,
)
from pt2logs.store.recovery import GC_DIR, TXN_DIR
from pt2logs.tables import TABLES
from pt2logs.tables.schema import WAREHOUSE_FORMAT


class WarehouseError(Exception):
    pass


def new_txn_id(now: dt.datetime | None = None) -> str:
    now = now or dt.datetime.now(dt.timezone.utc)
    return f"{now:%Y%m%dT%H%M%S%f}-{os.getpid()}-{secrets.token_hex(3)}"


#: warehouse locks this thread holds: url -> [depth, lock] (the lock is reentrant within a thread)
_held = threading.local()


def _held_locks() -> dict[str, list[Any]]:
    if not hasattr(_held, "locks"):
        _held.locks = {}
    return _held.locks


class Warehouse(Layout):
    # ------------------------------------------------------------------ layout
    def exists(self) -> bool:
        return self.fs.exists(self.path("_meta.json"))

    def init(self) -> None:
        meta_path = self.path("_meta.json")
        if self.fs.exists(meta_path):
            meta = self.meta()
            if int(meta.get("format", 0)) > WAREHOUSE_FORMAT:
                raise WarehouseError(
                    f"{self.location} was written by a newer pt2logs (warehouse format {meta.get('format')}); upgrade pt2logs"
                )
            return
        self.fs.makedirs(self.root, exist_ok=True)
        self.fs.makedirs(self.path(TXN_DIR), exist_ok=True)
        self._write_bytes(
            meta_path, orjson.dumps({"format": WAREHOUSE_FORMAT, "created_at": time.time()})
        )

    def meta(self) -> dict[str, Any]:
        """``_meta.json``; a damaged one is a clear error saying how to recover."""
        path = self.path("_meta.json")
        with self.fs.open(path, "rb") as f:
            data = f.read()
        try:
            meta = orjson.loads(data)
            int(meta.get("format", 0))
            return meta
        except (ValueError, TypeError, AttributeError):
            raise WarehouseError(
                f"{self.url('_meta.json')} is damaged (not the JSON pt2logs writes: {data[:40]!r}). It only records the "
                f'warehouse format: replace it with {{"format": {WAREHOUSE_FORMAT}}} (`pt2logs repair -w {self.location}` '
                "does) and run the command again; the data files are not affected."
            ) from None

    def _write_bytes(self, path: str, data: bytes) -> None:
        recovery.write_bytes(self, path, data)

    def table_files(self, table: str) -> list[str]:
        """Every Parquet file of ``table``: committed, uncommitted and replaced (see ``live_files``)."""
        return recovery.table_files(self, table)

    def garbage_names(self) -> set[str]:
        """Names of files that compactions replaced and that wait for deletion; readers skip them."""
        return recovery.garbage_names(self)

    def live_files(self, table: str, garbage: set[str] | None = None) -> list[str]:
        garbage = self.garbage_names() if garbage is None else garbage
        return [p for p in self.table_files(table) if os.path.basename(p) not in garbage]

    # ------------------------------------------------------------------ locking
    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Exclusive lock for recovery, commits, compaction and the views file; reentrant in a thread.

        Local: ``flock`` on ``<wh>/_lock``. Remote: a lease object (see :mod:`pt2logs.store.lease`)."""
        held = _held_locks()
        key = self.url()
        if key in held:
            held[key][0] += 1
            try:
                yield
            finally:
                held[key][0] -= 1
            return
        if self.remote:
            lk: Any = RemoteLock(
                self.fs, self.path("_lock"), owner=f"{socket.gethostname()}-{new_txn_id()}"
            )
        else:
            os.makedirs(self.root, exist_ok=True)
            lk = LocalLock(self.path("_lock"))
        lk.acquire()
        held[key] = [1, lk]
        try:
            yield
        finally:
            del held[key]
            lk.release()

    def check_lock(self, what: str) -> None:
        """Raise WarehouseError unless this thread (still) holds the lock: a remote lease can be lost."""
        entry = _held_locks().get(self.url())
        if entry is None:
            raise WarehouseError(f"{what} needs the warehouse lock")
        try:
            entry[1].check(what)
        except LeaseLost as e:
            raise WarehouseError(f"{what}: {e}; nothing more was changed") from None

    # ------------------------------------------------------------------ transactions
    def begin(self) -> Txn:
        return Txn(self)

    def recover(self, grace_s: float | None = None) -> list[str]:
        """Delete what dead writers left (see :mod:`pt2logs.store.recovery`) and replaced files past their grace."""
        with self.lock():
            return recovery.recover(self, self.check_lock, grace_s)


class Txn:
    """One transaction: data files from any number of workers, then files + runs rows."""

    def __init__(self, wh: Warehouse):
        self.wh = wh
        now = dt.datetime.now(dt.timezone.utc)
        self.started = now
        self.info = TxnInfo(wh.location, new_txn_id(now), now.strftime("%Y-%m-%d"))
        self.id = self.info.txn
        self._marker = wh.path(TXN_DIR, f"{self.id}.json")
        self._lockf: Any = None
        self._beat: Heartbeat | None = None
        self._etag: str | None = None
        wh.fs.makedirs(wh.path(TXN_DIR), exist_ok=True)
        if wh.remote:
            self._etag = put_new(wh.fs, self._marker, self._body())
            if self._etag is None:
                raise WarehouseError(f"transaction {self.id} exists already")
            self._beat = Heartbeat(self._renew, lease_s() / 6)
        else:
            import fcntl

            self._lockf = open(self._marker, "wb")  # noqa: SIM115 - held for the txn's lifetime
            fcntl.flock(self._lockf, fcntl.LOCK_EX)
            self._lockf.write(self._body())
            self._lockf.flush()

    def _body(self) -> bytes:
        return orjson.dumps(
            {
                "txn": self.id,
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "started": self.started.isoformat(),
                "lease_s": lease_s(),
                "renewed": time.time(),
            }
        )

    def _renew(self) -> bool:
        etag = put_if(self.wh.fs, self._marker, self._body(), self._etag or "")
        if etag is None:
            return False
        self._etag = etag
        return True

    def writer(self, tag: str = "main") -> PartWriter:
        return PartWriter(self.info, tag)

    def commit(self, files: pa.Table | None, runs: pa.Table) -> None:
        """Write the ``files`` rows, then the ``runs`` rows (the commit point).

        Under the warehouse lock, so no recovery runs meanwhile, and a commit is ordered after a
        running compaction (its ``committed_at`` is then the newer one, and wins)."""
        faults.step("txn.data")
        with self.wh.lock():
            self.check("commit")
            self._commit(files, runs)

    def check(self, what: str) -> None:
        """Under the lock: raise WarehouseError if this transaction's lease ran out and recovery removed it."""
        self.wh.check_lock(what)
        if self._beat is None:
            return
        self._beat.stop()  # no renewal races the check; nobody can judge the marker while we hold the lock
        self._beat = None
        h = head(self.wh.fs, self._marker)
        if h is None or h[0] != self._etag:
            raise WarehouseError(
                f"transaction {self.id} expired (no heartbeat for {lease_s():.0f} s) and was "
                "rolled back by another writer; run the ingest again"
            )

    def _commit(self, files: pa.Table | None, runs: pa.Table) -> None:
        w = PartWriter(self.info, "commit")
        if files is not None and files.num_rows:
            w.write_table("files", files)
        w.close()
        faults.step("txn.files")
        w = PartWriter(self.info, "commit")
        # the commit record: every data file of the transaction, with its size, rows and checksum
        w.set_metadata(
            "runs", {manifest.KEY: manifest.make_record(self.wh, self.id, self.info.ingest_date)}
        )
        import pyarrow as pa

        runs = runs.set_column(
            runs.schema.get_field_index("committed_at"),
            "committed_at",
            pa.array(
                [dt.datetime.now(dt.timezone.utc)] * runs.num_rows,
                type=TABLES["runs"].column("committed_at").type,
            ),
        )
        w.write_table("runs", runs)
        w.close()
        faults.step("txn.commit")
        self._release(delete=True)
        faults.step("txn.release")

    def abort(self) -> None:
        """Forget this transaction: its files are removed now (or by the next recover)."""
        self._release(delete=False)
        with contextlib.suppress(Exception), self.wh.lock():
            recovery.drop_txn(self.wh, self.id)

    def _release(self, delete: bool) -> None:
        if self._beat is not None:
            self._beat.stop()
            self._beat = None
        if self._lockf is not None:
            import fcntl

            fcntl.flock(self._lockf, fcntl.LOCK_UN)
            self._lockf.close()
            self._lockf = None
        if delete:
            with contextlib.suppress(FileNotFoundError):
                self.wh.fs.rm(self._marker)


__all__ = [
    "DEFAULT_WAREHOUSE",
    "GC_DIR",
    "PARTITION",
    "PartWriter",
    "Txn",
    "TxnInfo",
    "Warehouse",
    "WarehouseError",
    "new_txn_id",
    "txn_of",
]

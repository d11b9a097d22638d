"""Recovery and garbage collection: what a writer does, under the warehouse lock, before it writes.

**Committed** means: the transaction's ``runs`` file exists (it is written last, atomically).
Nothing else decides it, so recovery never deletes a committed transaction's files, whatever
state its marker is in. Rules, applied in this order:

1. A marker ``_txn/<txn>.json`` whose writer is alive is left alone (local: its ``flock`` is
   held; remote: its lease was renewed within ``LEASE_S`` on the store's clock).
2. A dead marker of a committed transaction is just removed (it died between its commit and
   its cleanup).
3. A dead marker of an uncommitted transaction: its files are deleted, then the marker.
4. Files of a transaction that has neither a marker nor a ``runs`` file (written by a worker
   that outlived its transaction) are deleted, as are ``*.parquet.tmp`` files of any
   transaction that is not alive, and (local) ``*.<pid>.tmp`` / ``*.<pid>.tmp.wal`` files of
   dead processes. Files are listed before markers: a marker is always created before its
   transaction's first file, and commits happen under the same lock.
5. Garbage collection: ``pt2logs compact`` does not delete the files it replaced; it lists them in
   ``_gc/<txn>.json`` (after its commit). Views skip listed files at once; the files are deleted
   once the record is older than the grace period (``PT2LOGS_GC_GRACE_S``, default 900 s): data
   files first, the ``runs`` file last, the record at the end.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import orjson

from pt2logs._fork import pid_alive
from pt2logs.store import faults
from pt2logs.store.lease import lease_s, mtime_of, server_now
from pt2logs.store.parts import Layout, found, stored_tables, txn_of

TXN_DIR = "_txn"
GC_DIR = "_gc"
GC_GRACE_S = 900.0

_PID_TMP = re.compile(r"\.(\d+)\.tmp(\.wal)?$")


def gc_grace_s() -> float:
    return float(os.environ.get("PT2LOGS_GC_GRACE_S", GC_GRACE_S))


def _ls(
    lay: Layout, folder: str, listed: dict[str, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The files in ``folder`` (not below). On an object store one listing (``listed``: one already made of
    the keys starting with ``folder``, e.g. a snapshot's of ``_``), the cache dropped (s3fs keeps listings,
    of sub-folders too: other processes write here)."""
    path = lay.path(folder)
    if lay.remote:
        base = path + "/"
        keys = found(lay, folder + "/") if listed is None else listed
        return [
            i
            for n, i in sorted(keys.items())
            if n.startswith(base) and "/" not in n[len(base) :] and i.get("type", "file") == "file"
        ]
    if not lay.fs.exists(path):
        return []
    return [i for i in lay.fs.ls(path, detail=True) if i.get("type", "file") == "file"]


def table_files(lay: Layout, table: str, tmp: bool = False) -> list[str]:
    """The Parquet files of ``table`` (with ``tmp``: also local ``*.parquet.tmp`` being written)."""
    base = lay.path(table)
    if lay.remote:  # one listing (no HEAD of the folder first)
        return sorted(p for p in found(lay, table + "/") if p.endswith(".parquet"))
    if not os.path.isdir(base):
        return []
    ends = (".parquet", ".parquet.tmp") if tmp else (".parquet",)
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(base) for f in fs if f.endswith(ends))


# ---------------------------------------------------------------------------------------- garbage
def tombstone(lay: Layout, txn: str, paths: list[str]) -> None:
    """Record that ``paths`` were replaced by ``txn`` (already committed): views skip them from now on."""
    body = orjson.dumps({"txn": txn, "at": time.time(), "files": [lay.rel(p) for p in paths]})
    write_bytes(lay, lay.path(GC_DIR, f"{txn}.json"), body)


def _records(
    lay: Layout, listed: dict[str, dict[str, Any]] | None = None
) -> list[tuple[str, float, list[str]]]:
    out = []
    for info in _ls(lay, GC_DIR, listed):
        name = info["name"]
        if not name.endswith(".json"):
            continue
        try:
            with lay.fs.open(name, "rb") as f:
                files = orjson.loads(f.read())["files"]
        except (FileNotFoundError, ValueError, KeyError):
            continue  # being written or removed
        out.append((name, mtime_of(info), files))
    return sorted(out)


def garbage_names(lay: Layout, listed: dict[str, dict[str, Any]] | None = None) -> set[str]:
    """File names (``part-….parquet``) that compactions replaced and that are not deleted yet (``listed``:
    see :func:`_ls`)."""
    return {posixpath.basename(f) for _, _, files in _records(lay, listed) for f in files}


def collect(
    lay: Layout, grace_s: float | None = None, check: Callable[[str], None] | None = None
) -> list[str]:
    """Delete the files of ``_gc`` records older than ``grace_s``. Caller holds the lock."""
    grace = gc_grace_s() if grace_s is None else grace_s
    removed: list[str] = []
    records = _records(lay)
    if not records:
        return removed
    now = server_now(lay.fs, lay.path(GC_DIR)) if lay.remote else time.time()
    for name, mtime, files in records:
        if now - mtime < grace:
            continue
        if check is not None:
            check("garbage collection")
        paths = [lay.path(*f.split("/")) for f in files]
        runs = [p for p, f in zip(paths, files) if f.startswith("runs/")]
        for p in [p for p in paths if p not in runs]:
            if _rm(lay, p):
                removed.append(p)
        faults.step("gc.data")
        for p in runs:  # last: while a transaction has data files, it has its runs file
            if _rm(lay, p):
                removed.append(p)
        _rm(lay, name)
        faults.step("gc.done")
    return removed


# ---------------------------------------------------------------------------------------- recovery
def recover(
    lay: Layout, check: Callable[[str], None] | None = None, grace_s: float | None = None
) -> list[str]:
    """Apply the rules above; the files deleted (temporary files not counted). Caller holds the lock."""
    if not lay.remote:
        _clean_pid_tmp(lay)
    by_txn: dict[str, list[str]] = defaultdict(list)
    for table in stored_tables():  # files first, then markers (see rule 4)
        for p in table_files(lay, table, tmp=True):
            t = txn_of(p.removesuffix(".tmp"))
            if t is not None:
                by_txn[t].append(p)
    committed = {
        t
        for t, ps in by_txn.items()
        if any(_is_runs(lay, p) and p.endswith(".parquet") for p in ps)
    }
    markers = _ls(lay, TXN_DIR)
    now = server_now(lay.fs, lay.path(TXN_DIR)) if lay.remote and markers else time.time()
    alive: set[str] = set()
    seen: set[str] = set()
    removed: list[str] = []
    for info in markers:
        name = posixpath.basename(info["name"])
        if not name.endswith(".json"):
            continue
        txn = name[: -len(".json")]
        seen.add(txn)
        if marker_alive(lay, info, now):
            alive.add(txn)
            continue
        if check is not None:
            check("recovery")
        # the marker first: a writer that was only stuck finds it gone and does not commit; a crash
        # right after leaves files without a marker or runs file, which rule 4 deletes next time
        _rm(lay, info["name"])
        if txn not in committed:
            removed += [
                p
                for p in _data_first(lay, by_txn.pop(txn, []))
                if _rm(lay, p) and not p.endswith(".tmp")
            ]
    for txn, paths in by_txn.items():
        if txn in alive:
            continue
        orphan = txn not in committed and txn not in seen
        gone = [p for p in paths if orphan or p.endswith(".tmp")]
        if gone and check is not None:
            check("recovery")
        removed += [p for p in _data_first(lay, gone) if _rm(lay, p) and not p.endswith(".tmp")]
    removed += collect(lay, grace_s, check)
    return removed


def drop_txn(lay: Layout, txn: str) -> list[str]:
    """Delete an uncommitted transaction's files and marker (its own writer aborting). Caller holds the lock."""
    paths = [
        p
        for t in stored_tables()
        for p in table_files(lay, t, tmp=True)
        if txn_of(p.removesuffix(".tmp")) == txn
    ]
    if any(_is_runs(lay, p) and p.endswith(".parquet") for p in paths):
        paths = []  # committed after all: nothing to undo
    removed = [p for p in _data_first(lay, paths) if _rm(lay, p) and not p.endswith(".tmp")]
    _rm(lay, lay.path(TXN_DIR, f"{txn}.json"))
    return removed


def marker_alive(lay: Layout, info: dict[str, Any], now: float) -> bool:
    path = info["name"]
    if lay.remote:
        age = now - mtime_of(info)
        if age <= lease_s():
            return True
        try:  # the writer's own lease length, if it was started with a longer one
            with lay.fs.open(path, "rb") as f:
                return age <= float(orjson.loads(f.read()).get("lease_s", 0))
        except (FileNotFoundError, ValueError):
            return False
    import fcntl

    try:
        with open(path, "rb") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
            return False
    except FileNotFoundError:
        return True  # committed and removed meanwhile


def _is_runs(lay: Layout, path: str) -> bool:
    return lay.rel(path).startswith("runs/")


def _data_first(lay: Layout, paths: list[str]) -> list[str]:
    return sorted(paths, key=lambda p: _is_runs(lay, p))


def _rm(lay: Layout, path: str) -> bool:
    try:
        lay.fs.rm(path)
        return True
    except FileNotFoundError:
        return False


def _clean_pid_tmp(lay: Layout) -> None:
    """``<name>.<pid>.tmp`` (and DuckDB's ``.tmp.wal``) left by a dead process: the views file, metadata."""
    for folder in (lay.root, lay.path(GC_DIR)):
        if not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            m = _PID_TMP.search(name)
            if m and not pid_alive(int(m.group(1))):
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(folder, name))


def write_bytes(lay: Layout, path: str, data: bytes) -> None:
    """Write a small file whole: local via a ``.<pid>.tmp`` and a rename, remote as one object."""
    parent = posixpath.dirname(path) if lay.remote else os.path.dirname(path)
    lay.fs.makedirs(parent, exist_ok=True)
    if lay.remote:
        with lay.fs.open(path, "wb") as f:
            f.write(data)
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)

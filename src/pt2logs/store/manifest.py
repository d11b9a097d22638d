"""Commit records: every transaction lists its data files in its own ``runs`` file.

A transaction is committed exactly when its ``runs`` file exists (:mod:`pt2logs.store.warehouse`). That
file's Parquet key-value metadata ``pt2logs.files`` is the transaction's record, written with it
(so it commits atomically with it, and costs no file of its own)::

    {"v": 1, "files": [{"path": "events/ingest_date=…/part-….parquet", "bytes": n, "rows": n,
                        "schema": 3, "hash": "xxh3_128:<hex>"}, …]}

``path`` is relative to the warehouse root, ``schema`` the table's schema version the file was
written with, ``hash`` the XXH3-128 of the file's bytes (local warehouses; what ``files.content_hash``
uses for inputs) or the object's ``etag:<ETag>`` (object stores compute it on upload; reading every
byte back to hash it would double an ingest's traffic). The record is made under the warehouse lock,
after every writer of the transaction closed its files: the files are listed in the transaction's
partition folder (one per table), each footer is read once for its rows.

Readers (:mod:`pt2logs.store.snapshot`) read exactly the files the records list, and check each one's size
against its record; ``pt2logs check`` (:func:`verify`) also checks hash, footer and rows. A ``runs``
file without the key was written before records existed (or by an older pt2logs): its transaction's
files are the listed files whose names carry its transaction id, as before.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    import pyarrow as pa

from pt2logs.store.parts import PARTITION, Layout, found, stored_tables, txn_of
from pt2logs.tables import TABLES

KEY = b"pt2logs.files"
VERSION = 1
_CHUNK = 8 << 20


def schema_version(table: str) -> int:
    return TABLES[table].version if table in TABLES else 1


def file_hash(lay: Layout, path: str, info: dict[str, Any] | None = None) -> str:
    """The recorded checksum of one data file (see the module's text)."""
    if lay.remote:
        info = info or lay.fs.info(path)
        tag = info.get("ETag") or info.get("etag") or ""
        return f"etag:{str(tag).strip(chr(34))}"
    import xxhash

    h = xxhash.xxh3_128()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return "xxh3_128:" + h.hexdigest()


def txn_files(lay: Layout, txn: str, day: str) -> list[dict[str, Any]]:
    """The listing entries (name, size, …) of ``txn``'s data files, ``runs`` aside: they are all in the
    transaction's partition folder of each table."""
    out: list[dict[str, Any]] = []
    prefix = f"part-{txn}-"
    if lay.remote:
        lay.fs.invalidate_cache()
    for table in stored_tables():
        if table == "runs":
            continue
        folder = lay.path(table, f"{PARTITION}={day}")
        try:
            entries = lay.fs.ls(folder, detail=True)
        except FileNotFoundError:
            continue
        for e in entries:
            name = posixpath.basename(e["name"].rstrip("/"))
            if name.startswith(prefix) and name.endswith(".parquet") and txn_of(name) == txn:
                out.append(e)
    return out


def make_record(lay: Layout, txn: str, day: str) -> bytes:
    """The ``pt2logs.files`` value of ``txn``'s runs file. Caller holds the lock; every writer closed."""
    import pyarrow.parquet as pq  # (imported where a footer is read: a query takes its records through DuckDB)

    files = []
    for e in sorted(txn_files(lay, txn, day), key=lambda e: e["name"]):
        path = e["name"]
        with lay.fs.open(path, "rb") as f:
            rows = pq.ParquetFile(f).metadata.num_rows
        rel = lay.rel(path)
        files.append(
            {
                "path": rel,
                "bytes": int(e["size"]),
                "rows": int(rows),
                "schema": schema_version(rel.split("/", 1)[0]),
                "hash": file_hash(lay, path, e),
            }
        )
    return orjson.dumps({"v": VERSION, "files": files})


def with_record(table: pa.Table, record: bytes) -> pa.Table:
    """``table`` (runs rows) whose schema metadata carries ``record``."""
    meta = dict(table.schema.metadata or {})
    meta[KEY] = record
    return table.replace_schema_metadata(meta)


def parse_record(value: bytes | str | None) -> list[dict[str, Any]] | None:
    """The file entries of a record (None: no record, a transaction from before records)."""
    if value is None:
        return None
    data = orjson.loads(value)
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        raise ValueError("not a pt2logs commit record")
    return data["files"]


def read_record(lay: Layout, runs_path: str) -> list[dict[str, Any]] | None:
    """The record of one ``runs`` file, read through pyarrow (raises on a damaged file)."""
    import pyarrow.parquet as pq

    with lay.fs.open(runs_path, "rb") as f:
        pf = pq.ParquetFile(f)
        pf.read()  # the rows too: a runs file is small, and a damaged one must not pass
        meta = pf.metadata.metadata or {}  # the footer's own key-value pairs (what DuckDB reads)
    return parse_record(meta.get(KEY))


@dataclass
class Problem:
    """One damaged or missing warehouse file."""

    path: str  # relative to the warehouse root
    txn: str | None
    why: str
    runs_file: bool = False


def verify(
    lay: Layout,
    runs_files: list[str],
    listing: dict[str, int],
    garbage: set[str],
    full: bool = True,
) -> tuple[list[Problem], int]:
    """Check every committed transaction's files against its record: present, size, and with ``full``
    hash, footer and rows. ``listing``: rel path -> size of every file there. Files a compaction
    replaced (``garbage``) are skipped. Returns the problems and how many files were checked."""
    problems: list[Problem] = []
    checked = 0
    by_txn: dict[str, list[str]] = {}
    for rel in listing:
        t = txn_of(rel)
        if t is not None and rel.split("/", 1)[0] != "runs":
            by_txn.setdefault(t, []).append(rel)
    for runs_path in runs_files:
        rel_runs = lay.rel(runs_path)
        txn = txn_of(rel_runs)
        if posixpath.basename(rel_runs) in garbage:
            continue
        checked += 1
        try:
            entries = read_record(lay, runs_path)
        except Exception as e:  # noqa: BLE001 - any failure to read the commit itself is damage
            problems.append(
                Problem(
                    rel_runs, txn, f"the runs file (the commit) cannot be read: {_why(e)}", True
                )
            )
            continue
        if entries is None:  # from before records: the footer of each file of the transaction
            entries = [{"path": rel} for rel in by_txn.get(txn or "", [])]
        for ent in entries:
            rel = ent["path"]
            if posixpath.basename(rel) in garbage:
                continue
            checked += 1
            why = _check_one(lay, ent, listing, full)
            if why:
                problems.append(Problem(rel, txn, why))
    return problems, checked


def _check_one(lay: Layout, ent: dict[str, Any], listing: dict[str, int], full: bool) -> str | None:
    rel = ent["path"]
    if rel not in listing:
        return "missing"
    size = listing[rel]
    if "bytes" in ent and size != ent["bytes"]:
        return f"{size:,} bytes where the commit recorded {ent['bytes']:,}"
    if not full:
        return None
    import pyarrow.parquet as pq

    path = lay.path(*rel.split("/"))
    if "hash" in ent:
        try:
            h = file_hash(lay, path)
        except OSError as e:
            return f"cannot be read: {_why(e)}"
        if h != ent["hash"]:
            return f"its content changed (checksum {h} where the commit recorded {ent['hash']})"
    try:
        with lay.fs.open(path, "rb") as f:
            rows = pq.ParquetFile(f).metadata.num_rows
    except Exception as e:  # noqa: BLE001
        return f"not a readable Parquet file: {_why(e)}"
    if "rows" in ent and rows != ent["rows"]:
        return f"{rows:,} rows where the commit recorded {ent['rows']:,}"
    return None


def _why(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}".splitlines()[0][:200]


def _runs_first() -> list[str]:
    """The table folders in listing order: ``runs`` first. A commit seen in the runs listing wrote its
    data files before it, so the later listings of the other folders hold them all (listed the other
    way round, a commit landing meanwhile would look as if its files were missing)."""
    return ["runs", *(t for t in stored_tables() if t != "runs")]


def listing(lay: Layout) -> dict[str, int]:
    """Every Parquet file of the warehouse's table folders: rel path -> size (one listing, runs first; on an
    object store the runs folder's, then the whole warehouse's, its runs files left out)."""
    out: dict[str, int] = {}
    if (
        lay.remote
    ):  # two recursive listings whatever the number of tables: runs/, then the whole warehouse
        tables = set(_runs_first())
        for prefix in ("runs/", ""):
            for p, info in found(lay, prefix, tables).items():
                rel = lay.rel(p)
                table = rel.split("/", 1)[0]
                if (
                    p.endswith(".parquet")
                    and info.get("type", "file") == "file"
                    and table in tables
                    and (prefix or table != "runs")  # the runs as the first listing saw them
                ):
                    out[rel] = int(info["size"])
        return out
    for table in _runs_first():
        base = lay.path(table)
        if not os.path.isdir(base):
            continue
        for d, _, names in os.walk(base):
            for n in names:
                if n.endswith(".parquet"):
                    p = os.path.join(d, n)
                    try:
                        out[lay.rel(p)] = os.stat(p).st_size
                    except FileNotFoundError:
                        continue
    return out

"""``pt2logs check`` and ``pt2logs repair``: a warehouse's files against their commit records.

:func:`check` verifies every committed transaction (:func:`pt2logs.store.manifest.verify`): each recorded
file present, its size, checksum, Parquet footer and rows as recorded; a transaction from before
records: each of its files' footers. It says which runs each damaged file held (from its commit).

:func:`repair` (under the warehouse lock for the moves):

1. a damaged ``_meta.json`` is written anew (it records only the format);
2. each damaged file is moved to ``_quarantine/<its path>``, with ``_quarantine/<name>.json``
   recording why, its transaction and its runs; a damaged ``runs`` file takes its whole
   transaction's files along (without the commit, nothing of it can be read);
3. each run that lost rows is ingested again from its sources (the ``files`` rows of its live
   transaction, or of the quarantined one) when every one of them still exists; a run whose sources
   are gone keeps what is left, and its loss stays recorded (reads name it, ``check`` lists it).
"""

from __future__ import annotations

import contextlib
import posixpath
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow.parquet as pq

from pt2logs.store import frame_upgrade, manifest, recovery
from pt2logs.store.parts import txn_of
from pt2logs.store.snapshot import QUARANTINE, is_data_path, quarantined, take
from pt2logs.store.warehouse import Warehouse, WarehouseError
from pt2logs.tables.schema import WAREHOUSE_FORMAT


@dataclass
class Found:
    path: str  # relative to the root
    txn: str | None
    why: str
    runs: list[str] = field(default_factory=list)
    runs_file: bool = False


@dataclass
class CheckResult:
    location: str
    files_checked: int = 0
    damaged: list[Found] = field(default_factory=list)
    #: losses `pt2logs repair` recorded: rel path -> record
    quarantined: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Parquet files in table folders that no commit names and no writer would make (never read)
    strays: list[str] = field(default_factory=list)
    meta_error: str | None = None
    #: live files written before frame_id / frame_compile_id (not damage: `pt2logs compact` upgrades them)
    without_frame_ids: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.damaged and self.meta_error is None

    def as_dict(self) -> dict[str, Any]:
        return {
            "location": self.location,
            "ok": self.ok,
            "files_checked": self.files_checked,
            "damaged": [f.__dict__ for f in self.damaged],
            "quarantined": self.quarantined,
            "strays": self.strays,
            "meta_error": self.meta_error,
            "without_frame_ids": self.without_frame_ids,
        }


def _runs_of(wh: Warehouse, runs_rel: str) -> list[str]:
    try:
        with wh.fs.open(wh.path(*runs_rel.split("/")), "rb") as f:
            return sorted(set(pq.read_table(f, columns=["run_id"]).column(0).to_pylist()))
    except Exception:  # noqa: BLE001 - a damaged runs file: its runs are unknown
        return []


def check(warehouse: str | Warehouse, full: bool = True) -> CheckResult:
    """Verify ``warehouse``; ``full=False`` checks presence and sizes only (what reads check)."""
    wh = warehouse if isinstance(warehouse, Warehouse) else Warehouse(warehouse)
    res = CheckResult(wh.url())
    if not wh.exists():
        raise WarehouseError(f"no warehouse at {wh.location}")
    try:
        wh.meta()
    except WarehouseError as e:
        res.meta_error = str(e)
    garbage = recovery.garbage_names(wh)
    listing = manifest.listing(wh)
    held = quarantined(wh)
    res.quarantined = held
    res.strays = sorted(rel for rel in listing if not is_data_path(rel))
    runs = [
        wh.path(*rel.split("/"))
        for rel in sorted(listing)
        if rel.startswith("runs/") and is_data_path(rel)
    ]
    problems, res.files_checked = manifest.verify(wh, runs, listing, garbage, full)
    runs_rel = {txn_of(wh.rel(p)): wh.rel(p) for p in runs}
    for p in problems:
        if p.path in held:
            continue  # a recorded loss
        ids = [] if p.runs_file else _runs_of(wh, runs_rel.get(p.txn or "", ""))
        res.damaged.append(Found(p.path, p.txn, p.why, ids, p.runs_file))
    res.without_frame_ids = frame_upgrade.lacking(wh, take(wh, read_records=_records(wh)))
    return res


def _records(wh: Warehouse) -> Any:
    """The snapshot's reader of commit records (a damaged commit: as if it had none; check names it)."""

    def read(runs: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for rel in runs:
            try:
                out[rel] = manifest.read_record(wh, wh.path(*rel.split("/")))
            except Exception:  # noqa: BLE001 - damage, reported by verify()
                out[rel] = None
        return out

    return read


@dataclass
class RepairResult:
    location: str
    meta_rewritten: bool = False
    quarantined: list[str] = field(default_factory=list)
    reingested: list[str] = field(default_factory=list)
    #: runs whose earlier commit is live again, whole (their sources have not changed since)
    restored: list[str] = field(default_factory=list)
    #: run -> why it could not be ingested again (its loss stays recorded)
    lost: dict[str, str] = field(default_factory=dict)
    remaining: list[Found] = field(default_factory=list)


def _move(wh: Warehouse, rel: str, why: str, txn: str | None, runs: list[str]) -> None:
    src = wh.path(*rel.split("/"))
    dest = wh.path(QUARANTINE, *rel.split("/"))
    wh.fs.makedirs(posixpath.dirname(dest) if wh.remote else dest.rsplit("/", 1)[0], exist_ok=True)
    with contextlib.suppress(FileNotFoundError):  # missing already: only the record
        wh.fs.mv(src, dest)
    body = {"path": rel, "txn": txn, "why": why, "runs": runs, "at": time.time()}
    recovery.write_bytes(
        wh, wh.path(QUARANTINE, posixpath.basename(rel) + ".json"), orjson.dumps(body)
    )


def _sources(wh: Warehouse, files_paths: list[str], runs: set[str]) -> dict[str, list[str]]:
    """run -> its input files, from ``files`` Parquet files (their rows of ``runs``)."""
    out: dict[str, list[str]] = {}
    for p in files_paths:
        try:
            with wh.fs.open(p, "rb") as f:
                t = pq.read_table(f, columns=["run_id", "path"])
        except Exception:  # noqa: BLE001 - damaged too: those runs' sources are unknown
            continue
        for run_id, path in zip(t.column(0).to_pylist(), t.column(1).to_pylist()):
            if run_id in runs:
                out.setdefault(run_id, []).append(path)
    return out


def repair(warehouse: str | Warehouse, progress: Any = None) -> RepairResult:
    """Quarantine what :func:`check` finds damaged and ingest its runs again where their sources exist."""
    from pt2logs.ingestion import ingest
    from pt2logs.inputs.sources import filesystem

    wh = warehouse if isinstance(warehouse, Warehouse) else Warehouse(warehouse)
    out = RepairResult(wh.url())
    found = check(wh)
    if found.meta_error:
        recovery.write_bytes(
            wh,
            wh.path("_meta.json"),
            orjson.dumps({"format": WAREHOUSE_FORMAT, "repaired_at": time.time()}),
        )
        out.meta_rewritten = True
    sources: dict[str, list[str]] = {}
    with wh.lock():
        for f in found.damaged:
            if f.runs_file:  # the commit is gone: every file of the transaction goes with it
                files_of = [
                    rel for rel in manifest.listing(wh) if txn_of(rel) == f.txn and rel != f.path
                ]
                files_tables = [
                    wh.path(*rel.split("/")) for rel in files_of if rel.startswith("files/")
                ]
                sources.update(_sources(wh, files_tables, set(_all_runs(wh, files_tables))))
                for rel in files_of:
                    _move(wh, rel, f"its commit {f.path} is damaged", f.txn, [])
                    out.quarantined.append(rel)
            _move(wh, f.path, f.why, f.txn, f.runs)
            out.quarantined.append(f.path)
    # the runs that lost rows, now that the damaged files are out of the way
    from pt2logs.query.views import connect, damaged_runs

    con = connect(wh)
    try:
        hurt = damaged_runs(con)
        rows = con.execute(
            "SELECT run_id, path FROM files WHERE run_id IN (SELECT unnest($r))",
            {"r": sorted(hurt)},
        ).fetchall()
    finally:
        con.close()
    for run_id, path in rows:
        sources.setdefault(run_id, []).append(path)
    for run_id in sorted(hurt | set(sources)):
        paths = sorted(set(sources.get(run_id, [])))
        gone = [p for p in paths if not _exists(filesystem, p)]
        if not paths or gone:
            out.lost[run_id] = (
                f"source {gone[0]} is gone"
                if gone
                else "its sources are unknown (its files rows were damaged)"
            )
            continue
        # not forced: the run keeps its tags; its damaged files no longer count as committed (re-read)
        got = ingest(paths, wh.location, run_id=run_id, progress=progress or (lambda *a: None))
        (out.reingested if got.runs_new + got.runs_updated else out.restored).append(run_id)
    out.remaining = check(wh, full=False).damaged
    return out


def _all_runs(wh: Warehouse, files_paths: list[str]) -> list[str]:
    ids: list[str] = []
    for p in files_paths:
        try:
            with wh.fs.open(p, "rb") as f:
                ids += pq.read_table(f, columns=["run_id"]).column(0).to_pylist()
        except Exception:  # noqa: BLE001
            continue
    return ids


def _exists(filesystem: Any, url: str) -> bool:
    try:
        fs, path = filesystem(url)
        return bool(fs.exists(path))
    except Exception:  # noqa: BLE001
        return False

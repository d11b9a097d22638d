"""The commit: one transaction's outcomes become its ``files`` and ``runs`` rows, then ``Txn.commit``.

Statistics are added up in one place, :meth:`pt2logs.readers.kit.ReadStats.merge`: the pieces of a
split file into that file's, the files of a run into the run's.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa

from pt2logs.analysis.identity import common_dir, posix
from pt2logs.ingestion.worker import FileOutcome, FileTask
from pt2logs.inputs.discover import RunPlan
from pt2logs.inputs.sources import ReadResult
from pt2logs.readers.kit import ReadStats, error_row
from pt2logs.store.warehouse import Txn
from pt2logs.tables import TABLES
from pt2logs.tables.rows import Rows, stamp
from pt2logs.version import __version__

if TYPE_CHECKING:
    from pt2logs.ingestion.committed import KnownRuns


@dataclass
class IngestResult:
    warehouse: str
    runs_new: int = 0
    runs_updated: int = 0
    runs_unchanged: int = 0
    files: int = 0
    bytes: int = 0
    content_bytes: int = 0
    events: int = 0
    errors: int = 0
    warnings: int = 0
    unknown: int = 0
    seconds: float = 0.0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: (path, why): inputs that could not be read and that no run contains (counted in ``errors``); those
    #: inside a run's folder are that run's ``ingest_errors`` rows
    problems: list[tuple[str, str]] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)
    removed_orphans: int = 0
    #: things the user should know that are not errors of the input (e.g. pt2logs.duckdb not rewritten)
    notes: list[str] = field(default_factory=list)

    @property
    def mb_per_s(self) -> float:
        return self.content_bytes / 1e6 / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items()}
        d["mb_per_s"] = round(self.mb_per_s, 1)
        d["skipped"] = [{"path": p, "why": w} for p, w in self.skipped]
        d["problems"] = [{"path": p, "why": w} for p, w in self.problems]
        return d


def merge_pieces(outs: list[FileOutcome]) -> FileOutcome:
    """One outcome per file: the pieces' statistics added up, in file order."""
    if len(outs) == 1:
        return outs[0]
    outs = sorted(outs, key=lambda o: o.task.piece[0] if o.task.piece else 0)
    st, rr = ReadStats(), ReadResult()
    h = hashlib.sha1()
    for o in outs:
        st.merge(o.stats)
        rr.bytes_read += o.read.bytes_read
        rr.content_bytes += o.read.content_bytes
        rr.error = rr.error or o.read.error
        h.update(o.read.digest.encode())
    # a file parsed in N pieces: the sha1 of its pieces' digests, marked as such
    rr.digest = f"pieces{len(outs)}:{h.hexdigest()}"
    task = FileTask(**{**outs[0].task.__dict__, "piece": None})
    return FileOutcome(task, st, rr, max(o.seconds for o in outs))


def by_run(outcomes: list[FileOutcome]) -> dict[str, list[FileOutcome]]:
    """Outcomes (of files or pieces, in any order) as one outcome per file, by run."""
    pieces: dict[tuple[str, str], list[FileOutcome]] = {}
    for o in outcomes:
        pieces.setdefault((o.task.run_id, o.task.url), []).append(o)
    out: dict[str, list[FileOutcome]] = {}
    for (run_id, _), outs in pieces.items():
        out.setdefault(run_id, []).append(merge_pieces(outs))
    return out


def _file_row(plan: RunPlan, o: FileOutcome) -> dict[str, Any]:
    s = o.stats
    f = next((f for f in plan.files if f.url == o.task.url), None)
    return {
        "run_id": plan.run_id,
        "rank": o.task.rank
        if o.task.rank is not None
        else (min(s.ranks) if len(s.ranks) == 1 else None),
        "path": o.task.url,
        "relpath": o.task.relpath,
        "format": o.task.fmt,
        "compression": f.compression if f else "none",
        "change_token": f.token if f else None,
        "bytes": o.read.bytes_read,
        "content_bytes": o.read.content_bytes,
        "content_hash": o.read.digest,
        "mtime": None if o.task.mtime is None else int(o.task.mtime * 1e6),
        "n_lines": s.lines,
        "n_events": s.events,
        "n_errors": s.errors,
        "n_warnings": s.warnings,
        "n_unknown": s.unknown,
        "first_ts": s.first_ts,
        "last_ts": s.last_ts,
    }


def commit(
    txn: Txn,
    plans: list[RunPlan],
    outcomes: list[FileOutcome],
    known_runs: KnownRuns,
    tags: dict[str, str],
    extra: dict[str, Any],
    res: IngestResult,
) -> None:
    """Write the transaction's ``files`` and ``runs`` rows (``runs`` last: the commit point) and count
    what it added in ``res``. A run keeps the tags it had; ``tags`` are added over them."""
    outcomes_by_run = by_run(outcomes)
    _write_problems(txn, plans)
    files_rows = Rows("files", full=True)
    runs_rows = Rows("runs", full=True)
    now = txn.started
    for plan in plans:
        outs = outcomes_by_run.get(plan.run_id, [])
        agg = ReadStats()
        formats: set[str] = set()
        nbytes = 0
        for o in sorted(outs, key=lambda o: o.task.relpath):
            files_rows.add(_file_row(plan, o))
            agg.merge(o.stats)
            if o.task.rank is not None:
                agg.ranks.add(o.task.rank)
            formats.add(o.task.fmt)
            nbytes += o.read.content_bytes
            res.bytes += o.read.bytes_read
            res.content_bytes += o.read.content_bytes
        agg.errors += len(plan.problems)
        prev = known_runs.get(plan.run_id)
        # a run whose logs name no rank is one process: 1 rank (its rows have rank NULL)
        run_tags = {**(prev["tags"] if prev else {}), **tags}
        row = {
            "run_id": plan.run_id,
            "name": plan.name,
            "source": plan.source,
            "root": plan.root,
            "n_ranks": max(1, len(agg.ranks)),
            "ranks": sorted(agg.ranks),
            "n_files": len(outs),
            "formats": sorted(formats),
            "torch_version": agg.torch_version,
            "torch_version_from": agg.torch_from,
            "started_at": agg.first_ts,
            "ended_at": agg.last_ts,
            "tags": orjson.dumps(run_tags).decode(),
            "ingested_at": now,
            "committed_at": now,
            "bytes": nbytes,
            "n_events": agg.events,
            "n_errors": agg.errors,
            "n_warnings": agg.warnings,
            "pt2logs_version": __version__,
            "python_version": agg.python_version or agg.python_from_paths,
        }
        row.update(
            {k: v for k, v in agg.run_fields.items() if v is not None}
        )  # the run's own record (pt2logs run)
        row.update(extra)
        row["user_root"] = user_root(row.get("cwd"), agg)
        runs_rows.add(row)
        if prev:
            res.runs_updated += 1
        else:
            res.runs_new += 1
        res.run_ids.append(plan.run_id)
        res.files += len(outs)
        res.events += agg.events
        res.errors += agg.errors
        res.warnings += agg.warnings
        res.unknown += agg.unknown
    txn.commit(_table("files", files_rows, txn.id), _table("runs", runs_rows, txn.id))


def _write_problems(txn: Txn, plans: list[RunPlan]) -> None:
    """Entries of a run's folder that could not be read (discovery's problems): ``ingest_errors`` rows
    of that run, kind ``unreadable``, written before the commit point like the readers' rows."""
    if not any(p.problems for p in plans):
        return
    w = txn.writer("discovery")
    try:
        for plan in plans:
            if not plan.problems:
                continue
            rows = Rows("ingest_errors")
            for path, why in plan.problems:
                rows.add(error_row(path, "unreadable", None, why))
            w.write(
                "ingest_errors",
                stamp(rows.take(), TABLES["ingest_errors"], {"run_id": plan.run_id, "txn": txn.id}),
            )
    except BaseException:
        w.discard()
        raise
    w.close()


def user_root(cwd: str | None, stats: ReadStats) -> str | None:
    """The folder a run's user-code paths are shown relative to (ends in ``/``): the working directory
    of ``pt2logs run`` when recorded, else the longest common folder of the user code its logs name."""
    if cwd:
        return posix(cwd).rstrip("/") + "/"
    return common_dir(stats.user_dir_lo, stats.user_dir_hi)


def _table(name: str, rows: Rows, txn: str) -> pa.Table:
    t = TABLES[name]
    batch = rows.take()
    return pa.Table.from_batches([stamp(batch, t, {"txn": txn})])

"""The planner: which runs to ingest, in which transactions, as which tasks.

* runs whose files are all committed unchanged are skipped (:func:`todo`);
* the rest are cut into transactions of at most :data:`TXN_BYTES` bytes or :data:`TXN_RUNS` runs
  (:func:`transactions`): an ingest killed midway loses at most one;
* each file becomes a :class:`~pt2logs.ingestion.worker.FileTask`; a large uncompressed local trace
  becomes one task per piece (:func:`tasks`, see :mod:`pt2logs.ingestion.split`);
* tasks are cut into chunks that the engine hands out as its workers free up, largest first
  (:func:`chunks`; a worker keeps one writer per transaction, so a chunk costs no files of its own), or,
  for an engine whose chunks each write their own files (Ray), balanced over its jobs (:func:`balance`).

What is already committed comes from the query side (:mod:`pt2logs.ingestion.committed`), never raw SQL here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pt2logs.ingestion import split
from pt2logs.ingestion.worker import FileTask
from pt2logs.inputs.discover import InputFile, RunPlan, _rank_of
from pt2logs.inputs.grouping import cut_head
from pt2logs.inputs.sources import filesystem, is_remote, read_head
from pt2logs.readers import FORMATS
from pt2logs.store.warehouse import Warehouse

if TYPE_CHECKING:
    from pt2logs.ingestion.committed import KnownFiles, KnownRuns

#: a transaction commits after this many bytes of input or runs, whichever first
#: (env PT2LOGS_TXN_BYTES / PT2LOGS_TXN_RUNS: an ingest killed midway loses at most one transaction)
TXN_BYTES = int(os.environ.get("PT2LOGS_TXN_BYTES", 1 << 30))
TXN_RUNS = int(os.environ.get("PT2LOGS_TXN_RUNS", 2000))
#: a pool's chunks: each about 1/CHUNK_SHARE of a job's share of what is left (guided scheduling: the
#: last chunks are single small files, so the workers end together), at most CHUNK_BYTES and
#: CHUNK_FILES (a chunk's outcomes are one progress step)
CHUNK_SHARE = 4
CHUNK_BYTES = 32 << 20
CHUNK_FILES = 64


def known(wh: Warehouse, force: bool) -> tuple[KnownFiles, KnownRuns]:
    """Committed files and runs (nothing when ``force``: every run is then ingested again as new)."""
    if force or not wh.table_files(
        "runs"
    ):  # nothing committed yet: not even DuckDB's import (~60 ms)
        return {}, {}
    from pt2logs.ingestion.committed import (
        committed_state,  # DuckDB: the parent's, never a worker's import
    )

    return committed_state(wh)


def unchanged(plan: RunPlan, known_runs: KnownRuns | None = None) -> bool:
    """Every file of the run is in the warehouse, unchanged, under this run id, and every entry of its
    folder that could not be read is already recorded (an entry that became unreadable since changes it)."""
    recorded = (known_runs or {}).get(plan.run_id, {}).get("unreadable", set())
    return (
        bool(plan.files)
        and all(f.known_run == plan.run_id for f in plan.files)
        and all(path in recorded for path, _ in plan.problems)
    )


def todo(
    plans: Iterable[RunPlan], force: bool, retag: bool, known_runs: KnownRuns | None = None
) -> tuple[list[RunPlan], int]:
    """The runs to ingest, and how many were skipped as unchanged (``retag``: new tags or run fields
    were given, so every run is written again)."""
    out: list[RunPlan] = []
    skipped = 0
    for plan in plans:
        if not force and not retag and unchanged(plan, known_runs):
            skipped += 1
            continue
        out.append(plan)
    return out, skipped


def transactions(plans: list[RunPlan]) -> Iterable[list[RunPlan]]:
    """Consecutive groups of runs, each closed at :data:`TXN_BYTES` bytes or :data:`TXN_RUNS` runs."""
    group: list[RunPlan] = []
    size = 0
    for p in plans:
        group.append(p)
        size += p.bytes
        if size >= TXN_BYTES or len(group) >= TXN_RUNS:
            yield group
            group, size = [], 0
    if group:
        yield group


def _ensure_head(f: InputFile) -> None:
    """Files skipped by size and mtime during discovery were not opened; a run that is ingested anyway
    (forced, retagged, or another of its files changed) needs their head and rank."""
    if not f.head:
        fs, path = filesystem(f.url)
        f.head, f.compression = read_head(fs, path)
        f.rank = _rank_of(f)
        cut_head(f)  # a forced re-ingest of a fleet holds every plan until its end


def pieces(task: FileTask, compression: str, jobs: int) -> list[FileTask]:
    """A large, uncompressed, local file of a format that splits (a trace) becomes one task per piece (see
    ingestion.split)."""
    fmt = FORMATS.get(task.fmt)
    if (
        jobs <= 1
        or fmt is None
        or not fmt.splits
        or compression != "none"
        or task.size < split.SPLIT_MIN_BYTES
    ):
        return [task]
    fs, path = filesystem(task.url)
    if is_remote(fs):
        return [task]
    points = split.split_points(path, jobs)
    if len(points) == 1:
        return [task]
    ends = points[1:] + [None]
    return [FileTask(**{**task.__dict__, "piece": (a, b)}) for a, b in zip(points, ends)]


def tasks(plans: list[RunPlan], jobs: int) -> list[FileTask]:
    """The tasks of one transaction: its files, big traces cut into ``jobs`` pieces."""
    out: list[FileTask] = []
    for plan in plans:
        for f in plan.files:
            _ensure_head(f)
            task = FileTask(plan.run_id, f.url, f.relpath, f.fmt.name, f.rank, f.mtime, f.size)
            out.extend(pieces(task, f.compression, jobs))
    return out


def chunks(tasks: list[FileTask], jobs: int) -> list[list[FileTask]]:
    """The tasks as chunks for an engine that keeps a writer per worker: one task per chunk in one
    process (each file is a progress step); for a pool, largest first, each chunk a shrinking share of
    what is left (many small files share a chunk early, one message each way; the last are single files)."""
    if jobs <= 1:
        return [[t] for t in tasks]
    left = sum(t.nbytes for t in tasks)
    out: list[list[FileTask]] = []
    cur: list[FileTask] = []
    size = 0
    for t in sorted(tasks, key=lambda t: -t.nbytes):
        cur.append(t)
        size += t.nbytes
        if size >= min(CHUNK_BYTES, left // (jobs * CHUNK_SHARE)) or len(cur) >= CHUNK_FILES:
            out.append(cur)
            left -= size
            cur, size = [], 0
    if cur:
        out.append(cur)
    return out


def balance(tasks: list[FileTask], jobs: int) -> list[list[FileTask]]:
    """Balance tasks over jobs by size (largest first), keeping each group's order stable."""
    if jobs <= 1 or len(tasks) <= 1:
        return [tasks] if tasks else []
    bins: list[list[FileTask]] = [[] for _ in range(min(jobs * 2, len(tasks)))]
    sizes = [0] * len(bins)
    for t in sorted(tasks, key=lambda t: -t.size):
        i = sizes.index(min(sizes))
        bins[i].append(t)
        sizes[i] += t.size
    return [b for b in bins if b]

"""Files found under an input path → runs (the rules in :mod:`pt2logs.inputs.discover`'s docstring): one run
per folder of rank files (split into jobs when a rank repeats), any other log a run of its own, auxiliary
files joined to the run they describe, a tlparse output group one run; everything one run for
``--run-id``; a run id stable across re-ingests (:func:`content_run_id`).
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections import defaultdict
from typing import Any

from pt2logs.inputs.run_plan import InputFile, RunPlan
from pt2logs.inputs.sources import filesystem, full_path, read_head

RANK_IN_NAME = re.compile(r"rank_(\d{1,6})(?!\d)")


def as_one_run(
    parts: list[tuple[Any, str, str, bool, list[InputFile]]], run_id: str | None
) -> list[RunPlan]:
    """Every given path as one run (``--run-id``, ``one_run``): ``ingest r0.log r1.log --run-id X`` is
    one run of both ranks, as their folder would be. Its root is the folder holding every given path
    (the path itself when only one was given); a file given twice (or also inside a given folder)
    is read once."""
    files = list({f.url: f for *_, fs_files in parts for f in fs_files}.values())
    if not files:
        return []
    fs, given, root, single, _ = parts[0]
    if len(parts) > 1:
        bases = [posixpath.dirname(r) if s else r for _, _, r, s, _ in parts]
        same_fs = all(p[0] is fs for p in parts)
        root, single = (posixpath.commonpath(bases) if same_fs else bases[0]), False
        given = full_path(fs, root)
    for f in files:
        rel = posixpath.relpath(f.path, root)
        f.relpath = posixpath.basename(f.path) if single or rel.startswith("../") else rel
    return [
        RunPlan(
            full_path(fs, root),
            posixpath.basename(root.rstrip("/")) or root,
            given,
            files,
            run_id or "",
        )
    ]


def _display_name(fs: Any, root: str, folder: str) -> str:
    """A run folder's name as seen from the input root: `train_loop/trace`, or the root's own name."""
    rel = posixpath.relpath(folder, root) if folder != root else ""
    if rel in ("", "."):
        return posixpath.basename(root.rstrip("/")) or root
    return rel


def group_found(
    fs: Any, given: str, root: str, found: list[tuple[str, InputFile]], single: bool
) -> list[RunPlan]:
    """The runs of the files ``found`` under one input path ``given`` (``(folder, file)`` pairs; ``single``: the
    path is a file): a tlparse output group is one run; in a folder, its rank files one run (several when
    ranks repeat), any other log a run of its own; auxiliary files join the run they describe."""
    if single:
        ((_, f),) = found or [(None, None)]  # type: ignore[misc]
        if f is None:
            return []
        f.relpath = posixpath.basename(f.path)
        return [RunPlan(f.url, f.stem, given, [f])]
    by_folder: dict[str, list[InputFile]] = defaultdict(list)
    by_group: dict[str, list[InputFile]] = defaultdict(list)
    for folder, f in found:
        (by_group[f.group] if f.group is not None else by_folder[f.anchor or folder]).append(f)
    runs: list[RunPlan] = []
    aux_by_folder: dict[str, list[InputFile]] = {}
    trace_runs_by_folder: dict[str, list[RunPlan]] = defaultdict(list)
    run_folder: dict[int, str] = {}  # id(plan) -> its root folder (filesystem path)
    for folder, files in sorted(by_group.items()):
        # a tlparse output folder (or an --all-ranks-html folder of them): one run
        plan = RunPlan(full_path(fs, folder), _display_name(fs, root, folder), given, files)
        for f in files:
            f.relpath = posixpath.relpath(f.path, folder)
        runs.append(plan)
        trace_runs_by_folder[folder].append(plan)
        run_folder[id(plan)] = folder
    for folder, files in sorted(by_folder.items()):
        traces = [f for f in files if not f.fmt.auxiliary and _rank_file(f)]
        others = [f for f in files if not f.fmt.auxiliary and not _rank_file(f)]
        aux = [f for f in files if f.fmt.auxiliary]
        for group in _split_jobs(traces):
            plan = RunPlan(full_path(fs, folder), _display_name(fs, root, folder), given, group)
            for f in group:
                f.relpath = posixpath.basename(f.path)
            runs.append(plan)
            trace_runs_by_folder[folder].append(plan)
            run_folder[id(plan)] = folder
        for f in others:
            f.relpath = posixpath.basename(f.path)
            plan = RunPlan(f.url, f.stem, given, [f])
            runs.append(plan)
            trace_runs_by_folder[folder].append(plan)
            run_folder[id(plan)] = folder
        if aux:
            aux_by_folder[folder] = aux
    # attach auxiliary files (stderr captures, counters) to the run they describe
    for folder, aux in aux_by_folder.items():
        target = None
        here = trace_runs_by_folder.get(folder, [])
        if len(here) == 1:
            target = here[0]
        elif not here:
            below = [
                p
                for d, ps in trace_runs_by_folder.items()
                for p in ps
                if d != folder and d.startswith(folder.rstrip("/") + "/")
            ]
            if len(below) == 1:
                target = below[0]
        if target is None:
            plan = RunPlan(full_path(fs, folder), _display_name(fs, root, folder), given, [])
            runs.append(plan)
            target = plan
            base = folder
            run_folder[id(plan)] = folder
        else:
            # the run's root moves up to the folder holding both (its id stays: it is already set
            # from the trace, so adding a stderr capture later does not make a new run); never down:
            # a second auxiliary folder attached to the same run keeps the files of the first inside
            current = run_folder.get(id(target), folder)
            base = posixpath.commonpath([current, folder]) if current != folder else folder
            run_folder[id(target)] = base
            target.run_id = target.run_id or content_run_id(target)
            for f in target.files:
                f.relpath = posixpath.relpath(f.path, base)
            target.root = full_path(fs, base)
            target.name = _display_name(fs, root, base)
        for f in aux:
            f.relpath = posixpath.relpath(f.path, base)
            target.files.append(f)
    return runs


def _split_jobs(traces: list[InputFile]) -> list[list[InputFile]]:
    """One run per folder, unless ranks repeat (several jobs wrote into one TORCH_TRACE dir)."""
    if not traces:
        return []
    # grouping uses the rank in the file NAME: envelopes were seen to repeat ranks across the
    # files of one job (tlparse's multi_rank_runtime: rank_5 and rank_6 both say rank 1)
    ranks = [name_rank(f) for f in traces]
    if all(r is None for r in ranks):
        return [[f] for f in traces] if len(traces) > 1 and not _same_job(traces) else [traces]
    if len(set(ranks)) == len(ranks):
        return [traces]
    # several jobs: order by first timestamp in the head, start a new run when a rank repeats
    ordered = sorted(traces, key=lambda f: (f.head[:21], f.path))
    groups: list[list[InputFile]] = [[]]
    seen: set[int | None] = set()
    for f in ordered:
        r = name_rank(f)
        if r in seen:
            groups.append([])
            seen = set()
        groups[-1].append(f)
        seen.add(r)
    return groups


def name_rank(f: InputFile) -> int | None:
    """The rank a file's name says (``rank_N``), else None."""
    m = RANK_IN_NAME.search(f.stem)
    return int(m.group(1)) if m else None


def _same_job(traces: list[InputFile]) -> bool:
    """Rank-less trace files in one folder are one job only if there is just one of them."""
    return len(traces) == 1


def _b(text: str) -> bytes:
    """A path's bytes; a file name that is not UTF-8 comes from the OS as surrogate escapes."""
    return text.encode("utf-8", "surrogateescape")


#: the bytes of a file's head kept once discovery has read it (group_found's order of traces reads 21)
HEAD_KEPT = 256


def cut_head(f: InputFile) -> None:
    """Keep the first :data:`HEAD_KEPT` bytes of a head discovery is done with (format, rank): heads are
    64 KiB a file, and a fleet's files are all held until its runs are planned."""
    if len(f.head) > HEAD_KEPT:
        f.head, f.head_cut = f.head[:HEAD_KEPT], True


def full_head(f: InputFile) -> bytes:
    """The file's head as read (read again where it was cut)."""
    if not f.head_cut:
        return f.head
    fs, path = filesystem(f.url)
    return read_head(fs, path)[0]


def content_run_id(plan: RunPlan) -> str:
    """A run id that is stable across re-ingests: from the run folder's name and the name and
    head of its first log file (so a copy of the same run elsewhere is the same run, a growing
    log keeps its id, and two folders holding the same first file are still told apart)."""
    primary = sorted(
        (f for f in plan.files if not f.fmt.auxiliary), key=lambda f: f.relpath
    ) or sorted(plan.files, key=lambda f: f.relpath)
    if not primary:
        return hashlib.sha1(_b(plan.root)).hexdigest()[:12]
    f = primary[0]
    if f.known_run:
        return f.known_run
    folder = "" if plan.root == f.url else posixpath.basename(plan.root.rstrip("/"))
    h = hashlib.sha1(_b(folder) + b"\0" + _b(f.stem))
    h.update(b"\0")
    head = full_head(f)
    h.update(head if head else _b(f.url))
    return h.hexdigest()[:12]


def _rank_file(f: InputFile) -> bool:
    """Whether the file's format says files named like it are one run per folder, one per rank."""
    pattern = f.fmt.layout.rank_files
    return pattern is not None and pattern.search(f.stem) is not None

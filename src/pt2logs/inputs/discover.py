"""Inputs → runs of files.

``pt2logs ingest PATH...`` accepts files, folders (walked to any depth) and
URLs. A **run** is one job execution:

* a file given directly is one run;
* in a folder, the TORCH_TRACE files (``dedicated_log_torch_trace_*``, plain or
  compressed) form one run, one file per rank; if the same rank appears twice
  the folder holds several jobs, and files are split into runs in order of
  their first timestamp;
* any other log file in a folder is a run of its own (e.g. a folder of
  single-process traces);
* auxiliary files (TORCH_LOGS stderr, counters) join the trace run of their
  own folder, or of the folder's only sub-run (``job/torch_logs.txt`` beside
  ``job/trace/...``);
* a tlparse output folder (``raw.jsonl`` or ``raw.log`` + ``compile_directory.json`` / ``index.html``) is one
  run: its ``raw.log`` (tlparse's copy of the original trace) when there is one, else ``raw.jsonl``
  read with its payloads (format ``tlparse_dir``); a ``--all-ranks-html`` output (``rank_N/``
  folders) is one run of all ranks; the report's other files are not read on their own;
* a ``torch_compile_debug`` folder (TORCH_COMPILE_DEBUG=1) is one run: its graph files and
  ``debug.log`` files join the trace in its ``tlparse/`` folder;
* ``--run-id`` (or ``one_run=True``) makes everything under the given paths one run: ``r0.log r1.log
  --run-id X`` is one run of two ranks, as their folder is.

Files that are not logs are skipped and reported, never errors. Hidden files
and folders (``.name``) are ignored.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pt2logs.inputs.listing import entry, walk
from pt2logs.inputs.run_folders import RunFolders, anchor
from pt2logs.inputs.sources import COMPRESSED_SUFFIXES, filesystem, full_path, read_head
from pt2logs.readers import FORMATS, Format, detect
from pt2logs.tables.schema import safe_text

RANK_IN_NAME = re.compile(r"rank_(\d{1,6})(?!\d)")
RANK_IN_HEAD = re.compile(rb'"rank": (\d{1,6})[,}]')


class InputError(Exception):
    """A path that cannot be ingested (missing, unreadable): the CLI exits with 2."""


@dataclass
class InputFile:
    path: str  # path within the filesystem (no protocol)
    url: str  # what users see (local path or URL)
    relpath: str  # relative to the run root
    size: int
    mtime: float | None
    token: str | None = None  # change token (pt2logs.inputs.listing): local ctime, object version or ETag
    fmt: Format | None = None
    compression: str = "none"
    rank: int | None = None
    head: bytes = b""
    known_run: str | None = None  # run id in the warehouse, for a file that has not changed
    group: str | None = None  # folder whose run this file belongs to, whatever its format (tlparse output)
    anchor: str | None = None  # folder an auxiliary file describes, when not its own (torch_compile_debug)
    folder_rank: int | None = None  # the rank its folder names (tlparse's rank_N/), when name and head say none

    @property
    def stem(self) -> str:
        name = posixpath.basename(self.path)
        for suf in COMPRESSED_SUFFIXES:
            if name.endswith(suf):
                return name[: -len(suf)]
        return name


@dataclass
class RunPlan:
    root: str  # path of the run's folder or file (as shown to users)
    name: str
    source: str  # the input path it was found under
    files: list[InputFile]
    run_id: str = ""
    #: (path, why): entries under the run's folder that could not be read (ingest_errors rows of the run)
    problems: list[tuple[str, str]] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)


@dataclass
class Discovery:
    runs: list[RunPlan] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why): not logs
    #: (path, why): inputs that could not be read (unreadable files and folders) and that no run's folder
    #: contains; the others are in their run's ``problems``. Errors, not skips
    problems: list[tuple[str, str]] = field(default_factory=list)
    fs: Any = None


def discover(paths: Iterable[str], *, run_id: str | None = None, one_run: bool = False, fmt: str | None = None,
             known: dict[str, tuple[int, float | None, str, str, str | None]] | None = None) -> Discovery:
    """Find the runs under ``paths``.

    ``known`` maps file URLs to (size, mtime, format, run_id, change token) of files already
    in the warehouse: unchanged ones are not read again (their format and run
    cannot have changed), which keeps re-ingest of an unchanged corpus cheap. The change token
    (:mod:`pt2logs.inputs.listing`) is compared when both the warehouse and the listing have one: a file
    rewritten with the same size and its mtime set back is read again.
    """
    out = Discovery()
    whole: list[tuple[Any, str, str, bool, list[InputFile]]] = []  # with --run-id: every path's files, one run
    for given in paths:
        fs, root = filesystem(given)
        out.fs = fs
        if not fs.exists(root):
            raise InputError(f"{given}: no such file or directory")
        if fs.isfile(root):
            try:
                folders = [(posixpath.dirname(root) or ".", [entry(fs, root)])]
            except OSError as e:
                raise InputError(f"{given}: {getattr(e, 'strerror', None) or e}") from None
            single = True
        else:
            folders = list(walk(fs, root, out.skipped, out.problems))
            single = False
        found: list[tuple[str, InputFile]] = []
        rf = RunFolders(folders if not single else [])
        tl_hidden: dict[str, int] = defaultdict(int)
        for folder, entries in folders:
            for p, size, mtime, token in entries:
                tl = rf.group(folder, posixpath.basename(p))
                if tl is not None and not rf.read_here(folder, posixpath.basename(p)):
                    tl_hidden[tl] += 1  # a run folder's report and artifact copies: read through the files it reads
                    continue
                f = InputFile(p, full_path(fs, p), "", size, mtime, token, group=tl,
                              folder_rank=rf.folder_rank(folder) if tl else None)
                k = known.get(safe_text(f.url)) if known else None
                if (k is not None and k[0] == size and _same_time(k[1], mtime) and fmt is None
                        and (k[4] is None or token is None or k[4] == token)):
                    f.fmt = FORMATS.get(k[2])
                    f.known_run = k[3]
                    r = _name_rank(f)
                    f.rank = r if r is not None else f.folder_rank
                    if f.fmt is not None:
                        found.append((folder, f))
                        continue
                undecodable: list[str] = []
                try:
                    f.head, f.compression = read_head(fs, p, problem=undecodable)
                except OSError as e:
                    out.problems.append((safe_text(f.url), f"unreadable: {getattr(e, 'strerror', None) or e}"))
                    continue
                f.fmt = detect(f.head, f.stem, fmt)
                if f.fmt is None and undecodable:  # not "empty": its bytes do not decompress (the read reports a later fault)
                    out.problems.append((safe_text(f.url), f"unreadable: {undecodable[0]}"))
                    continue
                if f.fmt is None:
                    out.skipped.append((f.url, "empty file" if size == 0 or not f.head.strip() else "not a recognised log format"))
                    continue
                found.append((folder, f))
        for f in (x for _, x in found):
            if f.head:
                f.rank = _rank_of(f)
            if f.fmt.auxiliary and not single:
                f.anchor = anchor(posixpath.dirname(f.path), root)
        found, skipped = rf.pick_sources(found, fmt)
        out.skipped.extend(skipped)
        for tl, n in sorted(tl_hidden.items()):
            if (missing := rf.without_reads(tl)):
                out.skipped.append((full_path(fs, tl), f"{missing}: {full_path(fs, tl)} ({n} report file(s) not read; its raw "
                                                        "log, or the trace it was made from, is what pt2logs reads)"))
                continue
            out.skipped.append((full_path(fs, tl), f"run folder: its {n} report/artifact file(s) are not read on their own "
                                                    "(the run is read from the files its format reads, e.g. tlparse's raw.log or raw.jsonl)"))
        if run_id is not None or one_run:
            whole.append((fs, given, root, single, [f for _, f in found]))
            continue
        out.runs.extend(_group(fs, given, root, found, single))
    out.runs.extend(_one_run(whole, run_id))
    seen: dict[str, RunPlan] = {}
    unique = []
    for plan in out.runs:
        if not plan.run_id:
            plan.run_id = content_run_id(plan)
        if plan.run_id in seen and run_id is None:
            out.skipped.append((plan.root, f"same content as {seen[plan.run_id].root} (run {plan.run_id}); ingested once"))
            continue
        seen[plan.run_id] = plan
        unique.append(plan)
    out.runs = unique
    out.problems = _assign_problems(out.problems, unique)
    return out


def _assign_problems(problems: list[tuple[str, str]], runs: list[RunPlan]) -> list[tuple[str, str]]:
    """Give each unreadable entry to the run whose folder contains it (the deepest such root); returns
    the entries no run contains."""
    roots = sorted(((safe_text(p.root).rstrip("/") + "/", p) for p in runs), key=lambda x: -len(x[0]))
    left = []
    for path, why in problems:
        plan = next((p for root, p in roots if path.startswith(root)), None)
        if plan is None:
            left.append((path, why))
        else:
            plan.problems.append((path, why))
    return left


def _one_run(parts: list[tuple[Any, str, str, bool, list[InputFile]]], run_id: str | None) -> list[RunPlan]:
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
    return [RunPlan(full_path(fs, root), posixpath.basename(root.rstrip("/")) or root, given, files, run_id or "")]


def _display_name(fs: Any, root: str, folder: str) -> str:
    """A run folder's name as seen from the input root: `train_loop/trace`, or the root's own name."""
    rel = posixpath.relpath(folder, root) if folder != root else ""
    if rel in ("", "."):
        return posixpath.basename(root.rstrip("/")) or root
    return rel


def _same_time(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) < 1e-3)


def _rank_of(f: InputFile) -> int | None:
    m = RANK_IN_HEAD.search(f.head) if f.head else None
    if m:
        return int(m.group(1))
    m = RANK_IN_NAME.search(f.stem)
    return int(m.group(1)) if m else f.folder_rank


def _group(fs: Any, given: str, root: str, found: list[tuple[str, InputFile]], single: bool) -> list[RunPlan]:
    if single:
        (_, f), = found or [(None, None)]  # type: ignore[misc]
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
            below = [p for d, ps in trace_runs_by_folder.items() for p in ps
                     if d != folder and d.startswith(folder.rstrip("/") + "/")]
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
    ranks = [_name_rank(f) for f in traces]
    if all(r is None for r in ranks):
        return [[f] for f in traces] if len(traces) > 1 and not _same_job(traces) else [traces]
    if len(set(ranks)) == len(ranks):
        return [traces]
    # several jobs: order by first timestamp in the head, start a new run when a rank repeats
    ordered = sorted(traces, key=lambda f: (f.head[:21], f.path))
    groups: list[list[InputFile]] = [[]]
    seen: set[int | None] = set()
    for f in ordered:
        r = _name_rank(f)
        if r in seen:
            groups.append([])
            seen = set()
        groups[-1].append(f)
        seen.add(r)
    return groups


def _name_rank(f: InputFile) -> int | None:
    m = RANK_IN_NAME.search(f.stem)
    return int(m.group(1)) if m else None


def _same_job(traces: list[InputFile]) -> bool:
    """Rank-less trace files in one folder are one job only if there is just one of them."""
    return len(traces) == 1


def _b(text: str) -> bytes:
    """A path's bytes; a file name that is not UTF-8 comes from the OS as surrogate escapes."""
    return text.encode("utf-8", "surrogateescape")


def content_run_id(plan: RunPlan) -> str:
    """A run id that is stable across re-ingests: from the run folder's name and the name and
    head of its first log file (so a copy of the same run elsewhere is the same run, a growing
    log keeps its id, and two folders holding the same first file are still told apart)."""
    primary = sorted((f for f in plan.files if not f.fmt.auxiliary), key=lambda f: f.relpath) or sorted(plan.files, key=lambda f: f.relpath)
    if not primary:
        return hashlib.sha1(_b(plan.root)).hexdigest()[:12]
    f = primary[0]
    if f.known_run:
        return f.known_run
    folder = "" if plan.root == f.url else posixpath.basename(plan.root.rstrip("/"))
    h = hashlib.sha1(_b(folder) + b"\0" + _b(f.stem))
    h.update(b"\0")
    h.update(f.head if f.head else _b(f.url))
    return h.hexdigest()[:12]


def _rank_file(f: InputFile) -> bool:
    """Whether the file's format says files named like it are one run per folder, one per rank."""
    pattern = f.fmt.layout.rank_files
    return pattern is not None and pattern.search(f.stem) is not None

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

import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pt2logs.inputs.grouping import (
    RANK_IN_NAME,
    as_one_run,
    content_run_id,
    cut_head,
    group_found,
    name_rank,
)
from pt2logs.inputs.listing import entry, walk
from pt2logs.inputs.run_folders import RunFolders, anchor
from pt2logs.inputs.run_plan import InputFile, RunPlan
from pt2logs.inputs.sources import filesystem, full_path, read_head
from pt2logs.readers import FORMATS, detect
from pt2logs.tables.rows import safe_text

RANK_IN_HEAD = re.compile(rb'"rank": (\d{1,6})[,}]')


class InputError(Exception):
    """A path that cannot be ingested (missing, unreadable): the CLI exits with 2."""


@dataclass
class Discovery:
    runs: list[RunPlan] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why): not logs
    #: (path, why): inputs that could not be read (unreadable files and folders) and that no run's folder
    #: contains; the others are in their run's ``problems``. Errors, not skips
    problems: list[tuple[str, str]] = field(default_factory=list)
    fs: Any = None


def discover(
    paths: Iterable[str],
    *,
    run_id: str | None = None,
    one_run: bool = False,
    fmt: str | None = None,
    known: dict[str, tuple[int, float | None, str, str, str | None]] | None = None,
) -> Discovery:
    """Find the runs under ``paths``.

    ``known`` maps file URLs to (size, mtime, format, run_id, change token) of files already
    in the warehouse: unchanged ones are not read again (their format and run
    cannot have changed), which keeps re-ingest of an unchanged corpus cheap. The change token
    (:mod:`pt2logs.inputs.listing`) is compared when both the warehouse and the listing have one: a file
    rewritten with the same size and its mtime set back is read again.
    """
    out = Discovery()
    whole: list[
        tuple[Any, str, str, bool, list[InputFile]]
    ] = []  # with --run-id: every path's files, one run
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
                    tl_hidden[tl] += (
                        1  # a run folder's report and artifact copies: read through the files it reads
                    )
                    continue
                f = InputFile(
                    p,
                    full_path(fs, p),
                    "",
                    size,
                    mtime,
                    token,
                    group=tl,
                    folder_rank=rf.folder_rank(folder) if tl else None,
                )
                k = known.get(safe_text(f.url)) if known else None
                if (
                    k is not None
                    and k[0] == size
                    and _same_time(k[1], mtime)
                    and fmt is None
                    and (k[4] is None or token is None or k[4] == token)
                ):
                    f.fmt = FORMATS.get(k[2])
                    f.known_run = k[3]
                    r = name_rank(f)
                    f.rank = r if r is not None else f.folder_rank
                    if f.fmt is not None:
                        found.append((folder, f))
                        continue
                undecodable: list[str] = []
                try:
                    f.head, f.compression = read_head(fs, p, problem=undecodable)
                except OSError as e:
                    out.problems.append(
                        (safe_text(f.url), f"unreadable: {getattr(e, 'strerror', None) or e}")
                    )
                    continue
                f.fmt = detect(f.head, f.stem, fmt)
                if (
                    f.fmt is None and undecodable
                ):  # not "empty": its bytes do not decompress (the read reports a later fault)
                    out.problems.append((safe_text(f.url), f"unreadable: {undecodable[0]}"))
                    continue
                if f.fmt is None:
                    out.skipped.append(
                        (
                            f.url,
                            "empty file"
                            if size == 0 or not f.head.strip()
                            else "not a recognised log format",
                        )
                    )
                    continue
                f.rank = _rank_of(f)
                cut_head(f)
                found.append((folder, f))
        for f in (x for _, x in found):
            if f.head and not f.head_cut:
                f.rank = _rank_of(f)
            if f.fmt.auxiliary and not single:
                f.anchor = anchor(posixpath.dirname(f.path), root)
        found, skipped = rf.pick_sources(found, fmt)
        out.skipped.extend(skipped)
        for tl, n in sorted(tl_hidden.items()):
            if missing := rf.without_reads(tl):
                out.skipped.append(
                    (
                        full_path(fs, tl),
                        f"{missing}: {full_path(fs, tl)} ({n} report file(s) not read; its raw "
                        "log, or the trace it was made from, is what pt2logs reads)",
                    )
                )
                continue
            out.skipped.append(
                (
                    full_path(fs, tl),
                    f"run folder: its {n} report/artifact file(s) are not read on their own "
                    "(the run is read from the files its format reads, e.g. tlparse's raw.log or raw.jsonl)",
                )
            )
        if run_id is not None or one_run:
            whole.append((fs, given, root, single, [f for _, f in found]))
            continue
        out.runs.extend(group_found(fs, given, root, found, single))
    out.runs.extend(as_one_run(whole, run_id))
    seen: dict[str, RunPlan] = {}
    unique = []
    for plan in out.runs:
        if not plan.run_id:
            plan.run_id = content_run_id(plan)
        if plan.run_id in seen and run_id is None:
            out.skipped.append(
                (
                    plan.root,
                    f"same content as {seen[plan.run_id].root} (run {plan.run_id}); ingested once",
                )
            )
            continue
        seen[plan.run_id] = plan
        unique.append(plan)
    out.runs = unique
    out.problems = _assign_problems(out.problems, unique)
    return out


def _assign_problems(problems: list[tuple[str, str]], runs: list[RunPlan]) -> list[tuple[str, str]]:
    """Give each unreadable entry to the run whose folder contains it (the deepest such root); returns
    the entries no run contains."""
    roots = sorted(
        ((safe_text(p.root).rstrip("/") + "/", p) for p in runs), key=lambda x: -len(x[0])
    )
    left = []
    for path, why in problems:
        plan = next((p for root, p in roots if path.startswith(root)), None)
        if plan is None:
            left.append((path, why))
        else:
            plan.problems.append((path, why))
    return left


def _same_time(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) < 1e-3)


def _rank_of(f: InputFile) -> int | None:
    m = RANK_IN_HEAD.search(f.head) if f.head else None
    if m:
        return int(m.group(1))
    m = RANK_IN_NAME.search(f.stem)
    return int(m.group(1)) if m else f.folder_rank

"""What the formats' layouts say about folders (:class:`pt2logs.readers.kit.Layout`), for discovery:
the run an auxiliary file belongs to (its anchor), and folders that are one run of a format (a tlparse
output folder, with its per-rank folders and report files)."""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from typing import Any

from pt2logs.inputs.listing import Entry
from pt2logs.readers import Format, Layout, layouts


def anchor(folder: str, root: str) -> str | None:
    """The run folder an auxiliary file belongs to, as the formats' layouts say (first answer wins)."""
    for _, lay in layouts():
        if lay.anchor is not None and (a := lay.anchor(folder, root)) is not None:
            return a
    return None


def run_folder_layout(names: set[str]) -> tuple[Format, Layout] | None:
    for fmt, lay in layouts():
        if lay.run_folder is not None and lay.run_folder(names):
            return fmt, lay
    return None


class RunFolders:
    """Folders that are one run of a format (a tlparse output folder), as the formats' layouts say."""

    def __init__(self, folders: list[tuple[str, list[Entry]]]):
        self.layout: dict[str, tuple[Format, Layout]] = {}
        self.names: dict[str, set[str]] = {}
        for folder, entries in folders:
            names = {posixpath.basename(e[0]) for e in entries}
            found = run_folder_layout(names)
            if found is not None:
                self.layout[folder] = found
                self.names[folder] = names
        #: parents of per-rank run folders (tlparse ``--all-ranks-html``): one run of all ranks
        self.parents = {posixpath.dirname(d) for d in self.layout if self._ranked(d)}
        #: run folder -> the folder of its run: itself, or the parent of per-rank folders
        self.run_of = {
            d: (
                posixpath.dirname(d)
                if posixpath.dirname(d) in self.parents and self._ranked(d)
                else d
            )
            for d in self.layout
        }

    def _ranked(self, d: str) -> bool:
        pat = self.layout[d][1].rank_folder
        return pat is not None and pat.match(posixpath.basename(d)) is not None

    def folder_rank(self, folder: str) -> int | None:
        """The rank a per-rank run folder names (tlparse's ``rank_3/``), for files whose name and head
        say none (its ``raw.log``); None for any other folder."""
        if folder not in self.layout or not self._ranked(folder):
            return None
        m = re.search(r"\d+", posixpath.basename(folder))
        return int(m.group()) if m else None

    def group(self, folder: str, name: str) -> str | None:
        """The run folder of a file inside such a run (None for any other file)."""
        if not self.run_of:
            return None
        if folder in self.parents and any(
            (p := lay.parent_files) is not None and p.match(name)
            for d, (_, lay) in self.layout.items()
            if posixpath.dirname(d) == folder
        ):
            return folder
        d = folder
        while True:
            if d in self.run_of:
                return self.run_of[d]
            up = posixpath.dirname(d)
            if up == d or not up:
                return None
            d = up

    def without_reads(self, run: str) -> str:
        """The layout's message for a run folder none of whose folders holds a file it reads ("" when one does)."""
        folders = [d for d, r in self.run_of.items() if r == run]
        if not folders or any(self.names[d] & set(self.layout[d][1].read_first) for d in folders):
            return ""
        return self.layout[folders[0]][1].without_reads

    def read_here(self, folder: str, name: str) -> bool:
        """Whether the file is one that its run folder reads (the others are the run's report files)."""
        return folder in self.layout and name in self.layout[folder][1].read_first

    def pick_sources(
        self, found: list[tuple[str, Any]], fmt: str | None
    ) -> tuple[list[tuple[str, Any]], list[tuple[str, str]]]:
        """(files kept, files skipped with why). In a run folder keep one of the files its layout reads
        (``read_first``): the first (a copy of the original log, e.g. tlparse's raw.log) when its format
        ranks better than the folder's own, unless ``--format`` asks for the folder's format; else the
        folder's own file (raw.jsonl)."""
        skipped: list[tuple[str, str]] = []
        if not self.layout:
            return found, skipped
        by_dir: dict[str, dict[str, Any]] = defaultdict(dict)
        for folder, f in found:
            if f.group is not None and folder in self.layout:
                by_dir[folder][posixpath.basename(f.path)] = f
        drop: set[int] = set()
        for folder, files in by_dir.items():
            own_fmt, lay = self.layout[folder]
            present = [files[n] for n in lay.read_first if n in files]
            if len(present) < 2:
                continue
            orig, own = present[0], present[-1]
            rank = orig.fmt.source_rank
            if (
                fmt == own_fmt.name
                or rank is None
                or own_fmt.source_rank is None
                or rank >= own_fmt.source_rank
            ):
                drop.add(id(orig))
                skipped.append(
                    (
                        orig.url,
                        f"a copy of the original log; {posixpath.basename(own.path)} is read instead "
                        f"(--format {own_fmt.name})",
                    )
                )
            else:
                drop.add(id(own))
                skipped.append(
                    (
                        own.url,
                        f"{own_fmt.description}: {posixpath.basename(orig.path)} (its copy of the "
                        "original log) is read instead, losslessly",
                    )
                )
        return [(d, f) for d, f in found if id(f) not in drop], skipped

"""Listing inputs: the files under a path, with what change detection compares (size, mtime).

Local folders are walked with ``os.walk`` (links to folders followed once; unreadable entries
reported, not raised); object stores are listed with ``fs.find``. Hidden files and folders
(``.name``) are left out. Nothing here reads a file's content.
"""

from __future__ import annotations

import os
import posixpath
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from pt2logs.schema import safe_text
from pt2logs.sources import is_remote


def walk(fs: Any, root: str, skipped: list[tuple[str, str]], problems: list[tuple[str, str]]
         ) -> Iterable[tuple[str, list[tuple[str, int, float | None]]]]:
    """(folder, [(file path, size, mtime)]) for every folder under root, sorted, hidden entries skipped.
    Symbolic links to folders are followed once (a loop, or a second path to a folder already read,
    is reported in ``skipped`` and not followed); unreadable folders and files go to ``problems``
    as (path, why)."""
    if not is_remote(fs):
        seen = {os.path.realpath(root)}

        def unreadable(e: OSError) -> None:
            problems.append((safe_text(str(e.filename)), f"unreadable folder: {e.strerror or e}"))

        for d, dirs, files in os.walk(root, onerror=unreadable, followlinks=True):
            keep = []
            for x in sorted(dirs):
                if x.startswith("."):
                    continue
                real = os.path.realpath(os.path.join(d, x))
                if real in seen:
                    skipped.append((safe_text(os.path.join(d, x)), f"the same folder as {safe_text(real)}, read already "
                                                                   "(a link to it, or a loop): not read twice"))
                    continue
                seen.add(real)
                keep.append(x)
            dirs[:] = keep
            entries = []
            for name in sorted(files):
                if name.startswith("."):
                    continue
                p = os.path.join(d, name)
                try:
                    st = os.stat(p)
                except OSError as e:
                    problems.append((safe_text(p), f"unreadable: {e.strerror or e}"))
                    continue
                entries.append((p, st.st_size, st.st_mtime))
            yield d, entries
        return
    by_dir: dict[str, list[tuple[str, int, float | None]]] = defaultdict(list)
    for p, info in sorted(fs.find(root, detail=True).items()):
        rel = posixpath.relpath(p, root)
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        if info.get("type") == "directory":
            continue
        mt = info.get("mtime") or info.get("LastModified") or info.get("last_modified")
        mtime = mt.timestamp() if hasattr(mt, "timestamp") else (float(mt) if isinstance(mt, (int, float)) else None)
        by_dir[posixpath.dirname(p)].append((p, int(info.get("size") or 0), mtime))
    yield from sorted(by_dir.items())

"""Listing inputs: the files under a path, with what change detection compares.

Local folders are walked with ``os.walk`` (links to folders followed once; unreadable entries
reported, not raised); object stores are listed with ``fs.find``. Hidden files and folders
(``.name``) are left out. Nothing here reads a file's content.

Each file comes as an :data:`Entry`: path, size, mtime and a **change token**, what else changes
when a file is rewritten: a local file's ctime in ns (``ctime:…``: every write changes it, and
unlike the mtime it cannot be set back), an object's version id (``version:…``) or ETag
(``etag:…``) when the store lists one, else None. Size, mtime and token equal to the warehouse's
mean the file was not rewritten (see :func:`pt2logs.inputs.discover.discover`).
"""

from __future__ import annotations

import os
import posixpath
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from pt2logs.inputs.sources import is_remote
from pt2logs.tables.rows import safe_text

#: (path, size, mtime in seconds, change token) of one file
Entry = tuple[str, int, float | None, str | None]
#: object-store listing keys that name one version of an object, best first
_VERSION_KEYS = ("VersionId", "version_id", "generation", "version")
_ETAG_KEYS = ("ETag", "etag", "Etag", "md5Hash")


def remote_token(info: dict[str, Any]) -> str | None:
    """An object's version id or ETag, as its store lists it (None when it lists neither)."""
    for keys, kind in ((_VERSION_KEYS, "version"), (_ETAG_KEYS, "etag")):
        for k in keys:
            v = info.get(k)
            if v not in (None, "", "null"):
                return f"{kind}:{str(v).strip(chr(34))}"
    return None


def entry(fs: Any, path: str) -> Entry:
    """One file given directly (OSError when it cannot be stat'ed)."""
    if not is_remote(fs):
        st = os.stat(path)
        return path, st.st_size, st.st_mtime, f"ctime:{st.st_ctime_ns}"
    info = fs.info(path)
    return path, int(info.get("size") or 0), _mtime(info), remote_token(info)


def _mtime(info: dict[str, Any]) -> float | None:
    mt = info.get("mtime") or info.get("LastModified") or info.get("last_modified")
    return (
        mt.timestamp()
        if hasattr(mt, "timestamp")
        else (float(mt) if isinstance(mt, (int, float)) else None)
    )


def walk(
    fs: Any, root: str, skipped: list[tuple[str, str]], problems: list[tuple[str, str]]
) -> Iterable[tuple[str, list[Entry]]]:
    """(folder, [entry of each file]) for every folder under root, sorted, hidden entries skipped.
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
                    skipped.append(
                        (
                            safe_text(os.path.join(d, x)),
                            f"the same folder as {safe_text(real)}, read already "
                            "(a link to it, or a loop): not read twice",
                        )
                    )
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
                entries.append((p, st.st_size, st.st_mtime, f"ctime:{st.st_ctime_ns}"))
            yield d, entries
        return
    by_dir: dict[str, list[Entry]] = defaultdict(list)
    for p, info in sorted(fs.find(root, detail=True).items()):
        rel = posixpath.relpath(p, root)
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        if info.get("type") == "directory":
            continue
        by_dir[posixpath.dirname(p)].append(
            (p, int(info.get("size") or 0), _mtime(info), remote_token(info))
        )
    yield from sorted(by_dir.items())

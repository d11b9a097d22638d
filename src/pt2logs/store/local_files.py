"""A local filesystem without importing fsspec for what pt2logs asks of a local warehouse or input.

Importing fsspec costs a process ~35 ms of CPU (its registry, asyncio, its caches), a twentieth of a summary of a
small warehouse and as much of a one-trace ingest (and of each pool worker's first file, issue 36), where pt2logs
asks a local path only whether a file is there, what it is, what a folder holds, to make a folder, to remove a file
and to open a file whole in binary. :class:`LocalFiles` answers those (``exists``, ``isfile``, ``info``, ``ls``,
``makedirs``, ``rm`` of files, ``open`` in ``rb`` / ``wb``) exactly as fsspec's ``LocalFileSystem`` does (its code,
read at fsspec 2026.9; tests/test_local_files.py compares the two on a real warehouse) and hands every other call
to a ``LocalFileSystem`` made on first use: ``find``, ``mv``, other modes and the rest are fsspec's own. Only a
plain POSIX path takes it (:func:`local_files`: a local warehouse, pt2logs.store.parts; a local input,
pt2logs.inputs.sources.filesystem); a URL, a chained one, or Windows gets fsspec's.
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import Any

#: what fsspec's local filesystem strips from a path (its protocols, each with either separator)
_PREFIXES = ("file://", "file:", "local://", "local:")


def _strip(path: Any) -> str:
    """``LocalFileSystem._strip_protocol`` on POSIX: the protocol off, absolute, no trailing ``/``."""
    path = os.fspath(path)
    for prefix in _PREFIXES:
        if path.startswith(prefix):
            path = path[len(prefix) :]
            break
    if not path.startswith("/"):
        if path.startswith("~"):
            path = os.path.expanduser(path)
        else:
            rel = path[2:] if path.startswith("./") else "" if path == "." else path
            path = f"{os.getcwd()}/{rel}"
    return path.rstrip("/") or "/"


class LocalFiles:
    """fsspec's ``LocalFileSystem`` for ``exists`` / ``isfile`` / ``info`` / ``ls`` / ``makedirs`` / ``rm`` of files /
    binary ``open``; fsspec's own for everything else."""

    protocol = ("file", "local")
    root_marker = "/"
    sep = "/"

    def __init__(self) -> None:
        self._fs: Any = None

    def _real(self) -> Any:
        if self._fs is None:
            from fsspec.implementations.local import LocalFileSystem

            self._fs = LocalFileSystem()
        return self._fs

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_fs":  # (pickling, copying: no fsspec for those)
            raise AttributeError(name)
        return getattr(self._real(), name)

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._fs = None

    @classmethod
    def _strip_protocol(cls, path: Any) -> str:
        return _strip(path)

    def invalidate_cache(self, path: str | None = None) -> None:
        """Nothing to forget: a local listing is never kept (as fsspec's)."""

    def exists(self, path: Any, **kwargs: Any) -> bool:
        try:
            self.info(path)
            return True
        except Exception:  # noqa: BLE001 - fsspec's rule: any error is "not there"
            return False

    def makedirs(self, path: Any, exist_ok: bool = False) -> None:
        """``LocalFileSystem.makedirs``."""
        os.makedirs(_strip(path), exist_ok=exist_ok)

    def open(self, path: Any, mode: str = "rb", **kwargs: Any) -> Any:
        """A file read or written whole in binary (``rb``, ``wb``: what the warehouse's writers and readers ask):
        the built-in file, as fsspec's local file wraps it; any other mode or option, fsspec's."""
        if mode in ("rb", "wb") and not kwargs.get("compression"):
            return open(_strip(path), mode)  # noqa: SIM115
        return self._real().open(path, mode, **kwargs)

    def rm(self, path: Any, recursive: bool = False, maxdepth: int | None = None) -> None:
        """``LocalFileSystem.rm`` of files (a missing one: FileNotFoundError); a folder, fsspec's."""
        paths = path if isinstance(path, list) else [path]
        for p in paths:
            q = _strip(p)
            if os.path.isdir(q) and not os.path.islink(q):
                self._real().rm(p, recursive=recursive, maxdepth=maxdepth)
            else:
                os.remove(q)

    def isfile(self, path: Any) -> bool:
        """``LocalFileSystem.isfile``: a regular file, links followed."""
        return os.path.isfile(_strip(path))

    def info(self, path: Any, **kwargs: Any) -> dict[str, Any]:
        if isinstance(path, os.DirEntry):
            out = path.stat(follow_symlinks=False)
            link = path.is_symlink()
            if path.is_dir(follow_symlinks=False):
                t = "directory"
            elif path.is_file(follow_symlinks=False):
                t = "file"
            else:
                t = "other"
            size = out.st_size
            if link:
                try:
                    size = path.stat(follow_symlinks=True).st_size
                except OSError:
                    size = 0
            path = _strip(path.path)
        else:
            path = _strip(path)
            out = os.stat(path, follow_symlinks=False)
            link = stat.S_ISLNK(out.st_mode)
            if link:
                out = os.stat(path, follow_symlinks=True)
            size = out.st_size
            if stat.S_ISDIR(out.st_mode):
                t = "directory"
            elif stat.S_ISREG(out.st_mode):
                t = "file"
            else:
                t = "other"
        result = {
            "name": path,
            "size": size,
            "type": t,
            "created": getattr(out, "st_birthtime", out.st_ctime),
            "islink": link,
        }
        for field in ("mode", "uid", "gid", "mtime", "ino", "nlink"):
            result[field] = getattr(out, f"st_{field}")
        if link:
            result["destination"] = os.readlink(path)
        return result

    def ls(self, path: Any, detail: bool = False, **kwargs: Any) -> list[Any]:
        path = _strip(path)
        path_info = self.info(path)
        if path_info["type"] != "directory":
            return [path_info] if detail else [path_info["name"]]
        infos: list[Any] = []
        with os.scandir(path) as it:
            for f in it:
                with contextlib.suppress(FileNotFoundError):  # gone since the scan
                    infos.append(self.info(f) if detail else _strip(f.path))
        return infos


def local_files(location: str) -> tuple[LocalFiles, str] | None:
    """(filesystem, root) for a plain local path on POSIX, as ``fsspec.core.url_to_fs`` gives them; None for
    anything else (a URL, a chained URL, Windows): fsspec's."""
    if os.sep != "/" or "://" in location or "::" in location or location.startswith(_PREFIXES):
        return None
    return _LOCAL, _strip(location)


#: the one instance, as fsspec hands out one cached ``LocalFileSystem``: two local paths are on the same
#: filesystem (``fs is other``: an ingest's paths under one --run-id share a root, inputs/grouping.py)
_LOCAL = LocalFiles()

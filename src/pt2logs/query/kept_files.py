"""What the query side keeps between processes, and where: the folder (the CLI's ``$PT2LOGS_CACHE/views``, the
library's only when asked; ``PT2LOGS_VIEWS_CACHE`` overrides both) and the stamp of pt2logs' own code that
names what is kept there.

What is kept: a snapshot's catalog (:mod:`pt2logs.query.catalog`), and texts made from the code alone, each kind in
a file of its own (:func:`read_texts`, :func:`write_texts`): the macros' fills (:mod:`pt2logs.query.macros`: SQL made
from Python facts, e.g. which formats are stderr captures), the keys of kept rows and answers, the columns of empty
answers (:mod:`pt2logs.query.answer_schemas`). All depend on the code (and the catalog on the snapshot), so all are
named by :func:`code_stamp`; a file that cannot be read or written is made again in memory, never an error.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from pt2logs.query.sql_files import query_dirs
from pt2logs.version import __version__

ENV = "PT2LOGS_VIEWS_CACHE"
#: bump when what a catalog file holds changes in a way the code stamp cannot see
FORMAT = 1
#: fills files kept (one per code stamp: the newest by use)
KEEP_FILLS = 4

_folder: Path | None = None


def use_folder(folder: str | Path | None) -> None:
    """Keep this process's catalogs in ``folder`` (None: in memory), unless ``PT2LOGS_VIEWS_CACHE`` says."""
    global _folder
    _folder = Path(folder) if folder is not None else None


def cache_dir() -> Path | None:
    """Where catalog files are kept; None: made in memory for each connection."""
    v = os.environ.get(ENV)
    if v is not None and v.strip().lower() in ("", "0", "off", "false", "no"):
        return None
    return Path(v).expanduser() if v else _folder


@functools.cache
def code_stamp() -> str:
    """What pt2logs' own code and SQL are, cheaply: every source file's path, size and mtime (the
    package, and the macros' folders outside it), with the version and DuckDB's. Read once per process."""
    import duckdb

    package = Path(__file__).resolve().parents[1]
    roots = [package] + [d for d in query_dirs() if package not in d.parents]
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{FORMAT}|{__version__}|{duckdb.__version__}".encode())
    for root in roots:
        for dirpath, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for f in sorted(files):
                if f.endswith((".py", ".sql", ".toml", ".c", ".h", ".so")):
                    st = os.stat(os.path.join(dirpath, f))
                    h.update(f"{dirpath}/{f}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def texts_path(kind: str) -> Path | None:
    """The file that keeps the texts of ``kind`` for this code (``<kind>-<stamp>.json`` in the cache folder; None:
    no folder)."""
    folder = cache_dir()
    return None if folder is None else folder / f"{kind}-{code_stamp()}.json"


def read_texts(kind: str) -> dict[str, str] | None:
    """The texts kept under ``kind`` for this code (None: no folder, no file, or one that does not read as texts)."""
    path = texts_path(kind)
    if path is None:
        return None
    with contextlib.suppress(OSError, ValueError):
        got = json.loads(path.read_text())
        if isinstance(got, dict) and all(isinstance(v, str) for v in got.values()):
            return got
    return None


def write_texts(kind: str, texts: dict[str, str]) -> None:
    """Keep ``texts`` under ``kind`` for this code (through a temporary file renamed into place; the newest
    :data:`KEEP_FILLS` files of the kind kept); a folder that cannot take it: nothing kept."""
    path = texts_path(kind)
    if path is None:
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(texts))
        os.replace(tmp, path)
        old = sorted(
            path.parent.glob(f"{kind}-*.json"), key=lambda p: p.stat().st_mtime, reverse=True
        )
        for p in old[KEEP_FILLS:]:
            p.unlink()
    with contextlib.suppress(OSError):
        tmp.unlink()


def kept_texts(kind: str, make: Callable[[], dict[str, str]]) -> dict[str, str]:
    """``make()``'s texts, kept in the cache folder under this code's stamp (``<kind>-<stamp>.json``): made once
    per code, read by every later process; without a folder (or one that cannot take it), ``make()``."""
    got = read_texts(kind)
    if got is None:
        got = make()
        write_texts(kind, got)
    return got

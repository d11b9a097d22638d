"""What the query side keeps between processes, and where: the folder (the CLI's ``$PT2LOGS_CACHE/views``, the
library's only when asked; ``PT2LOGS_VIEWS_CACHE`` overrides both) and the stamp of pt2logs' own code that
names what is kept there.

Two things are kept: a snapshot's catalog (:mod:`pt2logs.query.catalog`) and the macros' fills
(:mod:`pt2logs.query.macros`: SQL made from Python facts, e.g. which formats are stderr captures). Both depend on
the code alone (and the catalog on the snapshot), so both are named by :func:`code_stamp`; a file that cannot be
read or written is made again in memory, never an error.
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


def kept_texts(kind: str, make: Callable[[], dict[str, str]]) -> dict[str, str]:
    """``make()``'s texts, kept in the cache folder under this code's stamp (``<kind>-<stamp>.json``): made once
    per code, read by every later process; without a folder (or one that cannot take it), ``make()``."""
    folder = cache_dir()
    if folder is None:
        return make()
    path = folder / f"{kind}-{code_stamp()}.json"
    with contextlib.suppress(OSError, ValueError):
        got = json.loads(path.read_text())
        if isinstance(got, dict) and all(isinstance(v, str) for v in got.values()):
            return got
    texts = make()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(texts))
        os.replace(tmp, path)
        old = sorted(folder.glob(f"{kind}-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for p in old[KEEP_FILLS:]:
            p.unlink()
    with contextlib.suppress(OSError):
        tmp.unlink()
    return texts

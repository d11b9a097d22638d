"""A connection's views, macros and snapshot tables: one DuckDB catalog per snapshot, kept in a file.

What :func:`pt2logs.query.views.create_views` makes (some 90 statements: macros, a view per table, the
snapshot's tables of live transactions and best sources) depends only on the snapshot's files and on
pt2logs' own code, yet making it cost every connection ~0.2 s of CPU: DuckDB binds each view and table
macro as it is made (the views open their files' footers). So it is made once per snapshot into a DuckDB
file under the cache folder, named by a key of everything it depends on (:func:`key`: the warehouse's
location, every file the snapshot reads, the commits listed, the schema flags; pt2logs' code and DuckDB's
version), and each later connection to the same snapshot attaches that file read-only (a few ms): DuckDB
binds a stored view only when a query names it.

The catalog is attached under its own name and put after the connection's own database in the
``search_path``: a name is looked up in ``temp`` (a run scope's copies), then in the connection's
database (what the user made there: a table, a macro that replaces one of ours), then in the snapshot's.
Nothing of the user's goes into the read-only file. A new snapshot on the same connection attaches its
catalog and detaches the old one.

Snapshot isolation is the key's: a commit that lands adds a ``runs`` file and data files, so a new
snapshot has another key and its own catalog; the ``_runs_all`` / ``_live`` / ``_run_source`` tables in
a catalog were read from exactly the files its key names (Parquet files are never rewritten in place:
a file's name carries its transaction). A damaged or missing file is left out of the snapshot, so it
changes the key too.

Where the files go: the library writes nothing outside the warehouse unless asked, so by default a
connection makes its catalog in memory (what every connection cost before); the CLI asks
(:func:`use_folder`: ``$PT2LOGS_CACHE/views``, default ``~/.cache/pt2logs/views``), and
``PT2LOGS_VIEWS_CACHE`` overrides both (a folder; ``0`` or ``off``: in memory). A folder that cannot
be written, or a file that does not open, is the in-memory path too: never an error. The newest
:data:`KEEP` files are kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import weakref
from collections.abc import Callable
from pathlib import Path

import duckdb

from pt2logs.query import kept_rows
from pt2logs.query.kept_files import ENV, cache_dir, code_stamp, use_folder
from pt2logs.query.sql_text import ident as _ident
from pt2logs.query.sql_text import literal as _lit
from pt2logs.store.snapshot import Snapshot
from pt2logs.store.warehouse import Warehouse

__all__ = ["ENV", "attach", "attached", "cache_dir", "code_stamp", "key", "use_folder"]

#: catalog files kept in the cache folder (the newest by use)
KEEP = 64

_names = itertools.count()
#: per connection: the name of the attached catalog and its key
_ATTACHED: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, tuple[str, str]] = (
    weakref.WeakKeyDictionary()
)


#: the tables whose rows a catalog holds (``_runs_all``, ``_run_source``): on a local disk their files' sizes
#: and mtimes are in the key too, so a file changed in place (damage of the same size) is read anew
HELD = ("runs", "files")


def key(wh: Warehouse, snap: Snapshot) -> str:
    """Everything a snapshot's catalog depends on, hashed."""
    h = hashlib.blake2b(digest_size=20)
    h.update(f"{code_stamp()}|{wh.url()}\n".encode())
    for name in sorted(snap.commits):
        h.update(f"c|{name}\n".encode())
    for table in sorted(snap.files):
        h.update(f"t|{table}|{snap.complete.get(table)}\n".encode())
        held = table in HELD and not wh.remote
        for rel in snap.files[table]:
            h.update(f"f|{rel}\n".encode())
            if held:
                try:
                    st = os.stat(wh.path(*rel.split("/")))
                    h.update(f"{st.st_size}|{st.st_mtime_ns}\n".encode())
                except OSError:
                    h.update(b"gone\n")
    # rows kept after their commit (a snapshot made before they were kept asks the rules for them)
    for kind in kept_rows.KINDS:
        for txn in kept_rows.live_kept(kind, wh, snap.files.get("runs", [])):
            h.update(f"{kind.folder}|{txn}\n".encode())
    return h.hexdigest()


def _home(con: duckdb.DuckDBPyConnection) -> str:
    """The connection's own database (where the user's objects go)."""
    return str(con.execute("SELECT current_database()").fetchall()[0][0])


def _make(con: duckdb.DuckDBPyConnection, name: str, statements: list[str]) -> None:
    """Run ``statements`` with catalog ``name`` (attached, writable) as the default, then go back."""
    home = _home(con)
    con.execute(f"USE {_ident(name)}")
    try:  # one commit: a file's write-ahead log synced once, not once a statement
        con.execute("BEGIN")
        own = True
    except duckdb.TransactionException:  # the caller's transaction is open: the statements join it
        own = False
    try:
        for s in statements:
            con.execute(s)  # binding a view opens its files: it can lose the race with a deletion
        if own:
            con.execute("COMMIT")
    except BaseException:
        if own:
            con.execute("ROLLBACK")
        raise
    finally:
        con.execute(f"USE {_ident(home)}")


def _write(con: duckdb.DuckDBPyConnection, path: Path, statements: list[str]) -> bool:
    """Make the catalog file ``path`` (through a temporary file renamed into place: a reader never
    opens half of one). False when the folder cannot take it."""
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.{next(_names)}.tmp")
    name = f"_pt2logs_build_{os.getpid()}_{next(_names)}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        con.execute(f"ATTACH {_lit(str(tmp))} AS {_ident(name)}")
    except (OSError, duckdb.Error):
        return False
    try:
        _make(con, name, statements)
        con.execute(f"DETACH {_ident(name)}")
        os.replace(tmp, path)
        return True
    except OSError:
        return False
    finally:
        with contextlib.suppress(duckdb.Error):
            con.execute(f"DETACH DATABASE IF EXISTS {_ident(name)}")
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
            with contextlib.suppress(OSError):
                leftover.unlink()


def _prune(folder: Path) -> None:
    files = sorted(folder.glob("*.duckdb"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in files[KEEP:]:
        with contextlib.suppress(OSError):
            old.unlink()


def attach(
    con: duckdb.DuckDBPyConnection,
    wh: Warehouse,
    snap: Snapshot,
    statements: Callable[[], list[str]],
) -> None:
    """Give ``con`` the catalog of ``snap``: the cached file's, else made (into the cache folder when it
    takes it, else in memory) from ``statements()`` (the views' statements, ``TABLE`` for the snapshot's
    tables: they live in the catalog, not in ``temp``)."""
    k = key(wh, snap)
    before = _ATTACHED.get(con)
    if before is not None and before[1] == k:
        return
    name = f"pt2logs_snapshot_{next(_names)}"
    folder = cache_dir()
    attached = False
    if folder is not None:
        path = folder / f"{k}.duckdb"
        if path.exists() or _write(con, path, statements()):
            try:
                con.execute(f"ATTACH {_lit(str(path))} AS {_ident(name)} (READ_ONLY)")
                attached = True
                with contextlib.suppress(OSError):
                    os.utime(path)  # its last use: the files pruned are the least used
            except duckdb.Error:
                with contextlib.suppress(OSError):
                    path.unlink()  # damaged (a full disk, a crash while renaming): made again next time
            if not before:
                with contextlib.suppress(OSError):
                    _prune(folder)
    if not attached:
        con.execute(f"ATTACH ':memory:' AS {_ident(name)}")
        try:
            _make(con, name, statements())
        except BaseException:
            con.execute(f"DETACH {_ident(name)}")
            raise
    home = _home(con)
    con.execute(f"SET search_path = {_lit(f'{home}.main,{name}.main')}")
    _ATTACHED[con] = (name, k)
    if before is not None:
        with contextlib.suppress(duckdb.Error):
            con.execute(f"DETACH DATABASE IF EXISTS {_ident(before[0])}")


def attached(con: duckdb.DuckDBPyConnection) -> str | None:
    """The name of the snapshot catalog ``con`` reads (None: it has none)."""
    got = _ATTACHED.get(con)
    return got[0] if got else None

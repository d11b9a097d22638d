"""``<wh>/pt2logs.duckdb``: the warehouse's views in a DuckDB file, for the DuckDB CLI or a BI tool.

Rewritten after an ingest when what the views depend on changed (the signature in ``_views.json``):
which tables have files, which columns their newest files hold, the pt2logs version and the macros;
or when the file no longer opens as a DuckDB database with its views (damaged, truncated).
Local warehouses only; pt2logs itself never reads it (every command makes its views anew).

Binding the ~20 macros is half of the file's cost (0.14 s of 0.28 s after 300 runs), and a macro
depends on the views' columns, not on their files. So when an ingest will write the file whatever it
adds (the file or its signature is missing: a new warehouse), :meth:`ViewsFile.prepare` starts a
thread that makes it while the ingest discovers and parses — every view as the empty view of its
declared types, then the macros — and :meth:`ViewsFile.write` at the end only makes again the views
whose text differs from the statements the file was prepared with (the tables that now have files and
the views over them: 15 of 76 statements after a one-trace ingest; DuckDB 1.5 and later binds a view
again when it is queried; with an older DuckDB every view is made again). The prepared file
(committed and closed: DuckDB gives its memory back before the parse needs it) is
``pt2logs.duckdb.<pid>.tmp``, which recovery leaves alone while this process lives; it becomes the
views file by a rename, as an unprepared one does.

``pt2logs ingest`` as a program does neither: before it opens anything (no thread, no DuckDB yet; after its
pool's workers are forked) it forks the file's writer (:meth:`ViewsFile.fork_writer`: its own session, no
output; ``_views_writer.<its pid>.tmp`` marks it as work in progress from the fork until it ends, made by the
ingest, since a busy machine may first run the writer after the ingest has ended), which prepares the file while
the ingest parses, then waits; once everything is committed the
ingest tells it to keep the committed runs' outcomes and write (:meth:`ViewsFile.release`) and ends
without waiting for it, so the file's DuckDB work (~0.3 s of CPU, ``import duckdb`` included) is off a
one-trace ingest's critical path, and the keep (~0.9 CPU s after 300 runs) with it off a pooled ingest's.
Beside a pool, whose workers parse on every core, the writer prepares nothing: it waits, and makes the whole
file once told. Until the writer is done the file is the previous one (or none, in a new warehouse). An ingest that
fails or is killed before its commit never tells it: it removes what it prepared and ends (it reads the
end of the pipe). A writer killed while it writes leaves only its temporary file, which recovery removes,
and the next ingest writes the file (its signature was not written). ``PT2LOGS_VIEWS_FILE=0`` (:data:`ENV`): no
file at all; the forked process then only keeps the outcomes.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any

import orjson

from pt2logs._fork import fork
from pt2logs.store.warehouse import Warehouse
from pt2logs.tables import TABLES
from pt2logs.version import __version__

#: ``0`` / ``off`` / ``no``: no views file (the warehouse's ``pt2logs.duckdb`` is neither made nor rewritten; one
#: already there is left as it is). For warehouses nobody opens with the DuckDB CLI or a BI tool (pt2logs never
#: reads it): a pipeline's own warehouses, a test suite (~0.18 CPU s an ingest of a new warehouse spares).
ENV = "PT2LOGS_VIEWS_FILE"


def wanted() -> bool:
    """Whether ingests write the views file (:data:`ENV`)."""
    return os.environ.get(ENV, "").strip().lower() not in ("0", "off", "no", "false")


class ViewsFile:
    """The views file of one local warehouse: prepared ahead (optionally), written at the end."""

    def __init__(self, wh: Warehouse):
        self.wh = wh
        self.target = None if wh.remote or not wanted() else wh.path("pt2logs.duckdb")
        self._thread: threading.Thread | None = None
        self._ready = False
        self._made: frozenset[str] = frozenset()  # the statements the prepared file was made with
        self._go: int | None = None  # the pipe to a forked writer (fork_writer)

    @property
    def _tmp(self) -> str:
        return f"{self.target}.{os.getpid()}.tmp"

    def _writing(self, pid: int) -> str:
        """The mark of the forked writer ``pid`` (:meth:`fork_writer`), made by the ingest when it forks it."""
        return self.wh.path(f"_views_writer.{pid}.tmp")

    def _exists(self) -> bool:
        return (
            self.target is not None
            and os.path.exists(self.target)
            and os.path.exists(self.wh.path("_views.json"))
        )

    def prepare(self) -> None:
        """Start making the file in a thread, when the ingest will write it whatever it adds."""
        if self.target is None or self._exists() or self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self._prepare, name="pt2logs-views-file", daemon=True
        )
        self._thread.start()

    def _prepare(self) -> None:
        con = None
        try:
            import duckdb

            from pt2logs.query.view_sql import view_statements
            from pt2logs.query.views import database_config

            _remove(self._tmp)
            con = duckdb.connect(self._tmp, config=database_config())
            con.execute(
                "BEGIN"
            )  # one transaction: DuckDB commits (and syncs) a file database after every statement otherwise
            made = view_statements(None, _NoFiles(self.wh))  # type: ignore[arg-type]
            for s in made:
                con.execute(s)
            con.execute("COMMIT")
            self._made = frozenset(made)
            con.close()  # DuckDB's memory goes back before the parse: ~40 MB of peak in a one-process ingest
            con = None
            self._ready = True
        except Exception:  # noqa: BLE001 - only a head start: write() makes the file the usual way
            if con is not None:
                _close(con)
            _remove(self._tmp)

    def _prepared(self) -> bool:
        """Whether the prepared file is there (False: none was prepared, or preparing failed)."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        ready, self._ready = self._ready, False
        return ready

    def write(self) -> str | None:
        """(Re)write the file when its signature changed; its path (None for a remote warehouse)."""
        if self.target is None:
            return None
        from pt2logs.query.macros import statements
        from pt2logs.query.view_sql import view_statements

        prepared = self._prepared()
        con = None
        try:
            macros = [s for part in statements() for s in part]
            signature = orjson.dumps(
                [__version__, macros]
                + [
                    [name, bool(self.wh.table_files(name)), sorted(_newest_columns(self.wh, name))]
                    for name in sorted(TABLES)
                ]
            )
            sig_path = self.wh.path("_views.json")
            if self._exists():
                with open(sig_path, "rb") as f:
                    if f.read() == signature and _opens(self.target):
                        return self.target
            import duckdb

            from pt2logs.query.views import database_config

            made = (
                (self._made if _rebinds_views(duckdb.__version__) else frozenset(macros))
                if prepared
                else frozenset()
            )
            if not prepared:
                _remove(self._tmp)
            con = duckdb.connect(self._tmp, config=database_config())
            con.execute("BEGIN")
            # a prepared file has its macros: only the views are made again, over the files
            for s in view_statements(con, self.wh):
                if s not in made:
                    con.execute(s)
            con.execute("COMMIT")
            _close(con)
            con = None
            os.replace(self._tmp, self.target)
            self.wh._write_bytes(sig_path, signature)
            return self.target
        finally:
            if con is not None:
                _close(con)
            _remove(self._tmp)  # (after the rename: its WAL, if DuckDB left one)

    def fork_writer(self, ahead: bool = True) -> None:
        """Fork the process that writes the file when :meth:`release` says so. Call it before this process
        starts a thread or opens DuckDB (a forked child has none of its parent's threads). ``ahead``: it prepares
        a new warehouse's file meanwhile, on the core a parse in this process leaves idle; not beside a pool,
        whose workers parse on every core (it then only waits, and makes the whole file once told)."""
        if self.wh.remote or self._go is not None or not hasattr(os, "fork"):
            return  # (no fork: release() says so, and the ingest writes the file itself)
        r, w = os.pipe()
        try:
            pid = fork()  # (the child never frees what it inherits: pt2logs._fork)
        except BaseException:
            os.close(r)
            os.close(w)
            raise
        if pid == 0:
            try:
                os.close(w)
                self._serve(r, ahead)
            finally:
                with contextlib.suppress(OSError):
                    os.remove(self._writing(os.getpid()))
                os._exit(0)
        os.close(r)
        self._go = w
        # work in progress from now until the writer ends, whenever it is first scheduled (a busy machine may
        # run it only after this process has ended): recovery and a test's settled() read a live pid's .tmp
        with contextlib.suppress(OSError):
            open(self._writing(pid), "wb").close()  # noqa: SIM115

    def _serve(self, go: int, ahead: bool) -> None:
        """The forked writer: prepare the file (a new warehouse's, when ``ahead``) while the ingest parses, then
        write it once the ingest has committed; nothing when it ends without saying so."""
        os.setsid()  # not ended with the ingest's process group (a shell's ^C after it returned, a job runner)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        if ahead and self.target is not None and not self._exists():
            self._prepare()
        said = b""
        with contextlib.suppress(OSError):
            while chunk := os.read(go, 65536):
                said += chunk
        try:
            if not said.startswith(b"w"):
                return
            txns = said[1:].decode().split()
            if txns:  # the committed transactions' outcomes, decided once (the ingest left them to this process)
                from pt2logs.query import kept_cache

                with contextlib.suppress(Exception):
                    kept_cache.keep(self.wh, set(txns))
            if self.target is not None:
                with contextlib.suppress(Exception), self.wh.lock():
                    self.write()
        finally:
            if self.target is not None:
                _remove(self._tmp)

    def release(self, txns: list[str] | None = None) -> bool:
        """Tell the forked writer to keep the outcomes of ``txns`` (committed transactions) and write the
        file, not waiting for it; False when there is none."""
        if self._go is None:
            return False
        go, self._go = self._go, None
        try:
            os.write(go, b"w" + " ".join(txns or ()).encode())
        except OSError:
            return False
        finally:
            os.close(go)
        return True

    def discard(self) -> None:
        """Drop a prepared file (the ingest failed before its end); a forked writer ends unused."""
        if self._go is not None:
            os.close(self._go)
            self._go = None
        if self._prepared():
            _remove(self._tmp)

    def __enter__(self) -> ViewsFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()  # a prepared file not written by then: the ingest failed


def _rebinds_views(version: str) -> bool:
    """Whether DuckDB binds a view again when it is queried (1.5 and later, duckdb/duckdb#20696): a view
    prepared over the empty views, its text unchanged, then answers over the real ones. Before 1.5 a view
    kept the types it was created with ("Contents of view were altered"): every view is made again."""
    try:
        return tuple(int(x) for x in version.split(".")[:2]) >= (1, 5)
    except ValueError:
        return False


class _NoFiles:
    """A warehouse seen with no files at all (its paths and URLs are the real ones): its view statements
    make every view the empty view of its declared types, then the macros (what the file is prepared with)."""

    def __init__(self, wh: Warehouse):
        self._wh = wh

    def table_files(self, table: str) -> list[str]:
        return []

    def live_files(self, table: str, garbage: set[str] | None = None) -> list[str]:
        return []

    def garbage_names(self) -> set[str]:
        return set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._wh, name)


def _newest_columns(wh: Warehouse, table: str) -> set[str]:
    from pt2logs.query.view_sources import _present_columns

    return _present_columns(None, wh, table) or set()  # type: ignore[arg-type]


def _opens(path: str) -> bool:
    """Whether the views file opens and lists its views (a damaged one is made again, whatever its signature)."""
    import duckdb

    try:
        con = duckdb.connect(path, read_only=True)
    except Exception:  # noqa: BLE001 - any failure to open: not a views file
        return False
    try:
        return (
            con.execute("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchone()[0] > 0
        )
    except Exception:  # noqa: BLE001
        return False
    finally:
        _close(con)


def _close(con: Any) -> None:
    with contextlib.suppress(Exception):
        con.close()


def _remove(path: str) -> None:
    for p in (path, path + ".wal"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(p)

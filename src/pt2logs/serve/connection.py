"""The server's one DuckDB connection: views built once, taken anew when a commit lands.

Every page reads through :meth:`Connection.read`, which holds a lock (a DuckDB connection is used by one
thread at a time; pages are short) and, at most once per :data:`CHECK_S`, lists the warehouse's
commits (its ``runs`` files): when they changed since the views were made, the views are made again
over the new snapshot (:func:`pt2logs.query.views.create_views`), so a page never shows a half-committed
ingest and never needs a restart to show a new one. They are made again too when the outcomes and advice items
of a commit the snapshot holds are kept after it was taken (``pt2logs ingest`` keeps them in a process of its
own after the commit): a snapshot whose every commit has them kept reads them alone
(:mod:`pt2logs.query.view_sql`), a few hundred ms less per page at 10,000 runs. With each snapshot: the runs' overview
(:mod:`pt2logs.serve.runs_table`), and every run's outcome computed on a second connection in a thread. A run
scope (:meth:`Connection.scope`) whose runs' answers are not kept has them kept in another thread once the page's
queries are done (:mod:`pt2logs.query.answer_keeper`; a run tried once per server): the next page about
the run reads them.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from typing import Any

import duckdb

from pt2logs.query import kept_answers, kept_rows
from pt2logs.query import run_scope as scope
from pt2logs.query.queries import run_named, run_sql
from pt2logs.query.views import apply_settings, create_views, database_config, snapshot_of
from pt2logs.serve import runs_table
from pt2logs.store.snapshot import is_data_path
from pt2logs.store.warehouse import Warehouse

#: the connections of this process: their background queries are stopped before it exits (a DuckDB query
#: still running in a daemon thread at exit aborts the interpreter)
_OPEN: weakref.WeakSet[Connection] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    for c in list(_OPEN):
        c._stop_outcomes(wait=True)
        c._stop_keeper()


#: how often a request may list the warehouse's commits (a listing costs a round trip on an object store)
CHECK_S = 1.0


def commits(wh: Warehouse) -> frozenset[str]:
    """The ``runs`` files (the commit points) the warehouse holds now."""
    return frozenset(
        f.rsplit("/", 1)[-1] for f in wh.table_files("runs") if is_data_path(wh.rel(f))
    )


class Connection:
    def __init__(self, warehouse: str | Warehouse):
        self.wh = warehouse if isinstance(warehouse, Warehouse) else Warehouse(warehouse)
        self.lock = threading.Lock()
        self.closed = False
        _OPEN.add(self)
        self.con = duckdb.connect(config=database_config())
        kept_answers.track(self.con)  # (the answers its scopes find not kept: kept by _keep)
        #: the runs (transaction, run) whose answers were kept or tried by this server; the thread that keeps
        #: them, its connection
        self._tried: set[tuple[str, str]] = set()
        self._keeper: threading.Thread | None = None
        self._keeper_con: duckdb.DuckDBPyConnection | None = None
        apply_settings(self.con)
        self.commits = commits(self.wh)
        self._prepare()
        self.checked = time.monotonic()
        #: how many times the views were made (1 at start): a test sees a commit land through it
        self.generation = 1

    def _prepare(self) -> None:
        """The views over the snapshot, then what the pages keep per snapshot: the runs' overview
        (:mod:`pt2logs.serve.runs_table`), the run tables that hold rows (:mod:`pt2logs.query.run_scope`)."""
        create_views(self.con, self.wh)
        self.unkept = self._unkept()
        self._facts()
        runs_table.prepare(self.con)
        self.tables = scope.holding(self.con)
        self._stop_outcomes(wait=False)  # (under the lock: its thread may be waiting for it)
        self.outcomes_ready = threading.Event()
        gen, seen = getattr(self, "generation", 0) + 1, commits(self.wh)
        # one core (the pages keep the others), no progress bar on the server's terminal
        self._bg_con = duckdb.connect(config={"threads": 1})
        self._bg_con.execute("SET enable_progress_bar = false")
        self._bg = threading.Thread(
            target=self._outcomes,
            args=(self._bg_con, gen, seen),
            daemon=True,
            name="pt2logs-serve-outcomes",
        )
        self._bg.start()

    def _stop_outcomes(self, wait: bool) -> None:
        """The background computation of the previous snapshot interrupted (its result would be stale) and,
        with ``wait``, waited for (a DuckDB query still running in a thread when the process exits aborts it)."""
        bg = getattr(self, "_bg", None)
        if bg is not None and bg.is_alive():
            until = time.monotonic() + (30 if wait else 0)
            while (
                True
            ):  # (an interrupt between two of its queries is lost: sent again until it ends)
                with contextlib.suppress(duckdb.Error):
                    self._bg_con.interrupt()
                bg.join(0.1)
                if not bg.is_alive() or time.monotonic() > until:
                    break

    def _outcomes(
        self, con: duckdb.DuckDBPyConnection, generation: int, seen: frozenset[str]
    ) -> None:
        """Every run's outcome, on a connection of its own (seconds at 10,000 runs: the pages go on
        meanwhile), handed to the server's when the warehouse is still at the same commits."""
        try:
            apply_settings(con)
            create_views(con, self.wh)
            table = runs_table.outcomes(con)
            if commits(self.wh) != seen:
                return
            with self.lock:
                if self.generation == generation and self.commits == seen and not self.closed:
                    runs_table.keep_outcomes(self.con, table)
        except Exception:  # noqa: BLE001 - the pages compute them themselves
            pass
        finally:
            with contextlib.suppress(duckdb.Error):
                con.close()
            self.outcomes_ready.set()

    @contextlib.contextmanager
    def scope(
        self, run_ids: Iterable[str], queries: Iterable[str] | None = None, answers: bool = True
    ) -> Iterator[None]:
        """Inside :meth:`read`: the tables hold the rows of ``run_ids`` only (:mod:`pt2logs.query.run_scope`);
        with ``queries``, only the tables those named queries read (and the outcome rules run once when they call
        them: run_scope.MATERIALIZED). Then the answers it found not kept are kept
        in a thread (:meth:`_keep`). ``answers=False``: the kept answers are not read (a compile page's questions
        are about one compile, never kept: each would copy its own tables, five copies where one does)."""
        tables = self.tables
        if queries is not None:
            queries = tuple(queries)
            need = scope.tables_for(queries)
            tables = tuple(t for t in tables if t in need)
        with scope.scoped(self.con, run_ids, tables, answers=answers, queries=queries):
            yield
        self._keep(kept_answers.unkept(self.con))

    def _keep(self, wanted: set[tuple[str, str]]) -> None:
        """Keep the answers of the ``wanted`` runs (transaction, run) in a thread (one at a time; each run tried
        once), on a connection of one core; it starts its work once the page's queries are done (it waits for
        :meth:`read`'s lock)."""
        wanted -= self._tried
        if not wanted or self.closed or (self._keeper is not None and self._keeper.is_alive()):
            return  # (a run not tried yet is tried by a later page)
        self._tried |= wanted
        self._keeper = threading.Thread(
            target=self._keeping, args=(wanted,), daemon=True, name="pt2logs-serve-answers"
        )
        self._keeper.start()

    def _keeping(self, wanted: set[tuple[str, str]]) -> None:
        from pt2logs.query.answer_keeper import keep_answers, writable

        def connected(con: duckdb.DuckDBPyConnection) -> None:
            con.execute("SET threads = 1")
            self._keeper_con = con
            if self.closed:
                raise RuntimeError("closed")

        with self.lock:  # (the page that asked is done with its queries)
            pass
        with contextlib.suppress(Exception):  # best effort: a read-only warehouse keeps nothing
            if writable(self.wh):
                keep_answers(
                    self.wh, {t for t, _ in wanted}, connected, runs={r for _, r in wanted}
                )
        self._keeper_con = None

    def _stop_keeper(self) -> None:
        """The thread keeping answers interrupted and waited for (a DuckDB query still running in a thread when the
        process exits aborts it)."""
        keeper = self._keeper
        until = time.monotonic() + 30
        while keeper is not None and keeper.is_alive() and time.monotonic() < until:
            con = self._keeper_con
            if con is not None:
                with contextlib.suppress(duckdb.Error):
                    con.interrupt()
            keeper.join(0.1)

    def _facts(self) -> None:
        """Every run's ``run_facts()`` rows, once per snapshot, in memory, and a temporary macro of its name reading
        them: the weekly cards then total a table in memory, not the kept files (each card read and joined them
        again: ~50 CPU ms of / at 10,000 runs), nor, where a commit has no facts kept (a warehouse written before
        them, a keep not done yet, PT2LOGS_OUTCOME_CACHE=0), the whole macro planned again by each card (~100 ms a
        card at any size). Its answers are the macro's (tests/test_serve_facts.py)."""
        # the previous snapshot's first: the new rows are the catalog macro's, not the old table's
        self.con.execute(
            "DROP MACRO TABLE IF EXISTS temp.run_facts; DROP TABLE IF EXISTS temp._serve_run_facts"
        )
        try:
            scope.materialize(self.con, "run_facts", "_serve_run_facts")
        except duckdb.Error:  # (the cards ask the macro itself, and say what fails)
            return

    def _unkept(self) -> frozenset[str]:
        """The snapshot's commits whose outcomes or advice items are not kept (none when nothing is kept)."""
        if not kept_rows.enabled():
            return frozenset()
        runs = snapshot_of(self.con).files.get("runs", [])
        live = kept_rows.live_commit_txns(runs)
        return frozenset(
            live
            - set.intersection(
                *(set(kept_rows.live_kept(k, self.wh, runs)) for k in kept_rows.KINDS)
            )
        )

    def _kept_since(self) -> bool:
        """Whether a commit of the snapshot had its outcomes and advice items kept since it was taken."""
        if not self.unkept:
            return False
        kept = set.intersection(*(kept_rows.kept_txns(k, self.wh) for k in kept_rows.KINDS))
        return bool(self.unkept & kept)

    def _fresh(self) -> None:
        now = time.monotonic()
        if now - self.checked < CHECK_S:
            return
        self.checked = now
        seen = commits(self.wh)
        if seen != self.commits or self._kept_since():
            self._prepare()
            self.commits = seen
            self.generation += 1

    def current(self) -> int:
        """The generation of the views a page would read now (after taking a new snapshot if a commit landed)."""
        with self.lock:
            self._fresh()
            return self.generation

    @contextlib.contextmanager
    def read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """The connection, for one page's queries (views refreshed first when a commit landed)."""
        with self.lock:
            self._fresh()
            yield self.con

    def named(self, name: str, params: dict[str, Any] | None = None) -> Any:
        with self.read() as con:
            return run_named(con, name, params)

    def sql(self, sql: str, params: dict[str, Any] | None = None) -> Any:
        with self.read() as con:
            return run_sql(con, sql, params)

    def close(self) -> None:
        self.closed = True
        self._stop_outcomes(wait=True)
        self._stop_keeper()
        with self.lock:
            self.con.close()

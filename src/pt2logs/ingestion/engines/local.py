"""A pool of worker processes over files (and pieces of big files), fed chunk by chunk.

Each worker keeps one :class:`~pt2logs.store.warehouse.PartWriter` for the whole transaction: every chunk it
parses adds rows to the same Parquet files (one per table per worker), and the parent asks it to close
them as soon as no chunk of the transaction is left for it (its last Parquet row groups are written
while the other workers parse their last chunks). The parent hands out the next chunk to whichever
worker finished one (largest first, the smallest last), so every worker is busy to the end whatever
the files' speeds, and each chunk's outcomes reach the progress callback as soon as it is parsed.

    parent ── ("parse", txn, chunk) ──► worker inbox      (two per worker in flight: no idle gap)
    parent ◄── ("parsed", outcomes) ─── shared results queue
    parent ── ("close", txn) ─────────► a worker that parsed, once no chunk is left for it
                                          (while the others still parse) ─► ("closed", files written)

A worker that fails reports its error (the parent raises it: the transaction is aborted, nothing of it
is visible); a worker that dies is noticed within a fraction of a second; workers end themselves when
the parent is gone.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import queue
import stat
import traceback
from collections import deque
from collections.abc import Callable
from typing import Any

from pt2logs.ingestion.engines.inprocess import Engine
from pt2logs.ingestion.worker import FileOutcome, FileTask, memory_pool, new_writer, parse_file
from pt2logs.store.warehouse import PartWriter, TxnInfo

#: below this much input a pool costs more than it saves
MIN_POOL_BYTES = 48 << 20
#: chunks given to one worker at once (one parsing, the next waiting: the worker never waits for the parent)
IN_FLIGHT = 2


class WorkerFailed(RuntimeError):
    """A pool worker could not parse its chunk (not bad input: readers record that; a bug, a full disk)."""


def _watch_parent(parent: int, interval: float = 0.5) -> None:
    """A worker ends itself once its parent is gone (killed with SIGKILL, nothing shuts the pool down:
    the worker would otherwise wait on its inbox, or keep writing files for a dead transaction, forever)."""
    import threading
    import time

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="pt2logs-parent-watch", daemon=True).start()


def serve(wid: int, inbox: Any, results: Any, parent: int) -> None:
    """A worker's loop: parse chunks into this transaction's writer, close it when asked."""
    _watch_parent(parent)
    memory_pool()
    writer: PartWriter | None = None
    while True:
        msg = inbox.get()
        if msg is None:
            return
        kind, info, body = msg
        try:
            if kind == "parse":
                if (
                    writer is not None and writer.info != info
                ):  # never: the parent closes each txn first
                    raise RuntimeError(
                        f"worker {wid} asked to parse into {info.txn} with {writer.info.txn} open"
                    )
                if writer is None:
                    writer = new_writer(info, f"p{parent}-w{wid}")
                results.put(("parsed", wid, [parse_file(info, t, writer) for t in body]))
            elif kind == "close":
                written = writer.close() if writer is not None else []
                writer = None
                results.put(("closed", wid, written))
        except Exception as e:  # noqa: BLE001 - reported to the parent, which aborts the transaction
            if writer is not None:
                writer.discard()
                writer = None
            results.put(
                ("failed", wid, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-6)}")
            )


def _small_local_files(paths: list[str]) -> bool:
    """Whether ``paths`` are local files whose stored bytes add up to less than :data:`MIN_POOL_BYTES`:
    every chunk of such an ingest is parsed in this process (:meth:`ProcessPoolEngine.map`), so a pool
    would only cost its fork and its workers' exit. Folders and URLs are not walked here: a pool is made."""
    total = 0
    for p in paths:
        if "://" in p:
            return False
        try:
            st = os.stat(p)
        except OSError:
            return False
        if not stat.S_ISREG(st.st_mode):
            return False
        total += st.st_size
    return total < MIN_POOL_BYTES


class ProcessPoolEngine(Engine):
    """Workers are forked when the ingest begins (:meth:`begin`), before it starts DuckDB or its views
    thread (forking costs milliseconds; a spawned worker re-imports pyarrow for ~0.5 s), with the parent's
    objects out of the workers' collectors' reach (see ``_fork_safely``: a caller may hold DuckDB
    databases); not at all when the inputs are local files too small for a pool (they are parsed in this
    process). Where fork is not available, or for a pool started again after :meth:`close`, workers are
    spawned when a transaction needs them."""

    keeps_writer = True

    def __init__(self, jobs: int, start: str | None = None):
        self.jobs = jobs
        self._method = start or (
            "fork" if "fork" in mp.get_all_start_methods() and os.name == "posix" else "spawn"
        )
        self._procs: list[Any] = []
        self._inboxes: list[Any] = []
        self._results: Any = None

    def begin(self, paths: list[str]) -> None:
        if self._method == "fork" and not self._procs and not _small_local_files(paths):
            self._start("fork")
        self._method = "spawn"  # once: a pool needed later (after close) is spawned, as before

    def has_processes(self) -> bool:
        return bool(self._procs)

    def _start(self, method: str) -> None:
        ctx = mp.get_context(method)
        self._results = ctx.Queue()
        self._inboxes = [ctx.SimpleQueue() for _ in range(self.jobs)]
        self._procs = [
            ctx.Process(
                target=serve,
                args=(i, q, self._results, os.getpid()),
                daemon=True,
                name=f"pt2logs-worker-{i}",
            )
            for i, q in enumerate(self._inboxes)
        ]
        frozen = method == "fork" and not gc.get_freeze_count()
        if frozen:  # see _fork_safely
            gc.freeze()
        try:
            for p in self._procs:
                p.start()
        finally:
            if frozen:
                gc.unfreeze()

    # _fork_safely: a forked worker inherits every object of its parent, DuckDB databases among them (a
    # notebook's, a test process's). Each runs a scheduler of threads that the worker does not have; the
    # worker never uses them, but one that it frees (cyclic garbage its parent had not collected yet,
    # found by the worker's own collector) joins threads that do not exist: SIGSEGV in
    # duckdb::TaskScheduler::~TaskScheduler. gc.freeze() while forking puts the parent's objects out of
    # every worker's collector's reach (workers end with os._exit: nothing of the parent is ever freed
    # there); the parent's own collector gets them back at once (unfreeze).

    def map(
        self,
        info: TxnInfo,
        chunks: list[list[FileTask]],
        on_done: Callable[[list[FileOutcome]], None],
    ) -> None:
        total = sum(t.nbytes for c in chunks for t in c)
        if len(chunks) <= 1 or total < MIN_POOL_BYTES:
            super().map(info, chunks, on_done)
            return
        if not self._procs:
            self._start("spawn")
        todo = deque(chunks)
        busy = [0] * self.jobs
        try:
            for _ in range(
                IN_FLIGHT
            ):  # round-robin: two chunks go to two workers, not both to the first
                for w in range(self.jobs):
                    self._give(w, info, todo, busy)
            closing = 0
            while any(busy) or closing:
                kind, w, outcomes = self._next("parsed", "closed")
                if kind == "closed":
                    closing -= 1
                    continue
                busy[w] -= 1
                self._give(w, info, todo, busy)  # the one it finished replaced: IN_FLIGHT again
                if not busy[
                    w
                ]:  # no chunk left for it: it closes its files while the others still parse
                    self._inboxes[w].put(("close", info, None))
                    closing += 1
                on_done(outcomes)
        except BaseException:
            self._stop(
                kill=True
            )  # no worker goes on writing for a transaction the caller now aborts
            raise

    def _give(self, w: int, info: TxnInfo, todo: deque, busy: list[int]) -> None:
        """The next chunk, if any, to worker ``w``."""
        if todo:
            self._inboxes[w].put(("parse", info, todo.popleft()))
            busy[w] += 1

    def _next(self, *expect: str) -> tuple[str, int, Any]:
        """The next message from a worker (one of the kinds ``expect``); raises if one failed or died."""
        while True:
            try:
                kind, w, body = self._results.get(timeout=0.25)
            except queue.Empty:
                dead = [(p.name, p.exitcode) for p in self._procs if p.exitcode is not None]
                if dead:
                    raise WorkerFailed(
                        f"pool worker(s) ended unexpectedly (name, exit code): {dead}"
                    ) from None
                continue
            if kind == "failed":
                raise WorkerFailed(f"pool worker {w} failed: {body}")
            if kind not in expect:  # never: the protocol above asks one thing of a worker at a time
                raise WorkerFailed(f"pool worker {w} answered {kind!r}, expected one of {expect!r}")
            return kind, w, body

    def _stop(self, kill: bool) -> None:
        for p, q in zip(self._procs, self._inboxes):
            if kill:
                p.kill()
            else:
                q.put(None)
        for p in self._procs:
            p.join(timeout=None if not kill else 5)
        if self._results is not None:
            self._results.close()
        self._procs, self._inboxes, self._results = [], [], None

    def close(self) -> None:
        if self._procs:
            self._stop(kill=False)

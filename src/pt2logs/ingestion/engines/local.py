"""A process pool over files (and pieces of big files): each worker parses its tasks into its own Parquet parts."""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

from pt2logs.ingestion.engines.inprocess import Engine
from pt2logs.ingestion.worker import FileOutcome, FileTask, run_tasks
from pt2logs.warehouse import TxnInfo

#: below this much input a pool costs more than it saves
MIN_POOL_BYTES = 48 << 20


def _ready() -> int:
    return os.getpid()


def _watch_parent(parent: int, interval: float = 0.5) -> None:
    """Pool initializer: a worker ends itself once its parent is gone (killed with SIGKILL, nothing
    shuts the pool down: the worker would otherwise wait on its task queue, or keep writing files
    for a dead transaction, forever)."""
    import threading
    import time

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="pt2logs-parent-watch", daemon=True).start()


class ProcessPoolEngine(Engine):
    """Workers are forked at construction, before the parent has started DuckDB or Arrow threads
    (forking then is safe and costs milliseconds; a spawned worker re-imports pyarrow for ~0.5 s).
    Where fork is not available, workers are spawned."""

    def __init__(self, jobs: int, start: str | None = None):
        self.jobs = jobs
        self._seq = 0
        method = start or ("fork" if "fork" in mp.get_all_start_methods() and os.name == "posix" else "spawn")
        self._pool: ProcessPoolExecutor | None = self._new_pool(method)
        if method == "fork":
            # start every worker now (ProcessPoolExecutor forks lazily, at a later submit)
            for f in [self._pool.submit(_ready) for _ in range(jobs)]:
                f.result()

    def _new_pool(self, method: str) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(self.jobs, mp_context=mp.get_context(method),
                                   initializer=_watch_parent, initargs=(os.getpid(),))

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = self._new_pool("spawn")
        return self._pool

    def map(self, info: TxnInfo, groups: list[list[FileTask]],
            on_done: Callable[[list[FileOutcome]], None]) -> None:
        total = sum(t.size for g in groups for t in g)
        if len(groups) <= 1 or total < MIN_POOL_BYTES:
            super().map(info, groups, on_done)
            return
        pool = self._get_pool()
        futures: set[Future] = set()
        for g in groups:
            self._seq += 1
            futures.add(pool.submit(run_tasks, info, g, f"p{os.getpid()}-w{self._seq}"))
        try:
            while futures:
                finished, futures = wait(futures, return_when=FIRST_COMPLETED)
                for f in finished:
                    on_done(f.result())
        except BaseException:
            for f in futures:
                f.cancel()
            raise

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

"""A process pool over files: each worker parses a group of files into its own Parquet parts."""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

from pt2logs.ingestion import Engine, FileOutcome, FileTask, run_tasks
from pt2logs.warehouse import TxnInfo

#: below this much input a pool costs more than it saves
MIN_POOL_BYTES = 48 << 20


class ProcessPoolEngine(Engine):
    def __init__(self, jobs: int):
        self.jobs = jobs
        self._pool: ProcessPoolExecutor | None = None
        self._seq = 0

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(self.jobs, mp_context=mp.get_context("spawn"))
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

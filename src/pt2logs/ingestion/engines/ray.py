"""Distributed ingest on Ray: file tasks run as Ray tasks on the cluster's workers.

The driver lists files and plans transactions exactly as the local engine does;
each task streams its files through the same readers and writes Parquet parts
straight into the warehouse (a shared path or an object store such as s3://);
the driver commits each transaction (``files`` then ``runs`` rows) once all of
its tasks are done. A task that fails fails the transaction: nothing of it is
visible, and the next ingest picks the runs up again.

    pt2logs ingest s3://bucket/traces/ --warehouse s3://bucket/wh/ --engine ray --address auto

On a cluster, every worker needs pt2logs installed (``pip install 'pt2logs[ray]'`` in the
image, or a ``runtime_env``) and read access to the inputs and write access to the warehouse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pt2logs.ingestion.engines.inprocess import Engine
from pt2logs.ingestion.worker import FileOutcome, FileTask, run_tasks
from pt2logs.store.warehouse import TxnInfo


class RayEngine(Engine):
    #: a Ray task is stateless: each group of tasks writes files of its own (the planner makes few, balanced)
    keeps_writer = False

    def __init__(self, address: str | None = None, jobs: int | None = None):
        try:
            import ray
        except ImportError:
            raise RuntimeError("the Ray engine needs ray: pip install 'pt2logs[ray]'") from None
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
                "ignore_reinit_error": True,
            }
            if address:
                kwargs["address"] = address
            elif jobs:
                kwargs["num_cpus"] = jobs
            ray.init(**kwargs)
            self._started = True
        self.jobs = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._task = ray.remote(run_tasks)

    def map(
        self,
        info: TxnInfo,
        groups: list[list[FileTask]],
        on_done: Callable[[list[FileOutcome]], None],
    ) -> None:
        ray = self._ray
        pending = [self._task.remote(info, g, f"ray{i}") for i, g in enumerate(groups)]
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                on_done(ray.get(done[0]))
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()
            self._started = False

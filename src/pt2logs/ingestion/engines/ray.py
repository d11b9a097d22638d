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
        self._reaper: Any = None
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
                "ignore_reinit_error": True,
            }
            if address:
                kwargs["address"] = address
            else:
                if jobs:
                    kwargs["num_cpus"] = jobs
                kwargs["_temp_dir"] = self._start_reaper()
            try:
                ray.init(**kwargs)
            except BaseException:  # Ctrl-C or SIGTERM while Ray starts: nothing of it stays
                self._stop(ray.is_initialized())
                raise
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

    def _start_reaper(self) -> str:
        """A temp folder of the local Ray's own, and its reaper (:mod:`.ray_reaper`): whatever ends this
        process, the Ray processes that name the folder end with it."""
        import os
        import subprocess
        import sys
        import tempfile

        from pt2logs.ingestion.engines import ray_reaper

        # short: Ray's sockets live under it (a socket path has at most 107 bytes)
        folder = tempfile.mkdtemp(prefix="pt2ray-", dir=os.environ.get("RAY_TMPDIR"))
        self._reaper = subprocess.Popen(
            [sys.executable, ray_reaper.__file__, folder],
            stdin=subprocess.PIPE,
            start_new_session=True,  # a Ctrl-C to the terminal's group does not end it first
            close_fds=True,
        )
        return folder

    def _stop(self, shutdown: bool = True) -> None:
        if shutdown:
            self._ray.shutdown()
        if self._reaper is not None:
            self._reaper.stdin.close()  # the reaper ends what is left, removes the folder
            self._reaper.wait()
            self._reaper = None

    def has_processes(self) -> bool:
        return True

    def close(self) -> None:
        if self._started:
            self._started = False
            self._stop()

"""Engines decide *where* readers run; they all call the same readers and writers.

* :class:`inprocess.Engine` — in this process (small inputs, ``--jobs 1``);
* :class:`local.ProcessPoolEngine` — a process pool over files (``--jobs N``);
* :mod:`pt2logs.ingestion.engines.ray` — Ray tasks on a cluster (``--engine ray``).

Engines import only :mod:`pt2logs.ingestion.worker` (the task and its outcome, ``run_tasks``).
"""

from __future__ import annotations

import os

from pt2logs.ingestion.engines.inprocess import Engine

__all__ = ["Engine", "make_engine"]


def make_engine(jobs: int | None = None, kind: str = "local", address: str | None = None) -> Engine:
    if kind == "ray":
        from pt2logs.ingestion.engines.ray import RayEngine

        return RayEngine(address=address, jobs=jobs)
    n = jobs if jobs is not None else (os.cpu_count() or 1)
    if n <= 1:
        return Engine()
    from pt2logs.ingestion.engines.local import ProcessPoolEngine

    return ProcessPoolEngine(n)

"""Engines decide *where* readers run; they all call the same readers and writers.

* :class:`pt2logs.ingestion.Engine` — in this process (small inputs, ``--jobs 1``);
* :class:`local.ProcessPoolEngine` — a process pool over files (``--jobs N``);
* :mod:`pt2logs.engines.ray` — Ray tasks on a cluster (``--engine ray``).
"""

from __future__ import annotations

import os

from pt2logs.ingestion import Engine


def make_engine(jobs: int | None = None, kind: str = "local", address: str | None = None) -> Engine:
    if kind == "ray":
        from pt2logs.engines.ray import RayEngine

        return RayEngine(address=address, jobs=jobs)
    n = jobs if jobs is not None else (os.cpu_count() or 1)
    if n <= 1:
        return Engine()
    from pt2logs.engines.local import ProcessPoolEngine

    return ProcessPoolEngine(n)

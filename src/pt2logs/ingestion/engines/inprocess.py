"""The in-process engine: every task group runs here, one after the other (small inputs, ``--jobs 1``).

Engines decide *where* task groups run; they import only :mod:`pt2logs.ingestion.worker` and hand each
group's outcomes to ``on_done`` as soon as it is parsed. They know nothing of plans or commits.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from pt2logs.ingestion.worker import FileOutcome, FileTask, run_tasks
from pt2logs.warehouse import TxnInfo


class Engine:
    """Runs task groups in this process; the base of the other engines (see pt2logs.ingestion.engines)."""

    #: how many task groups can run at once (the planner cuts big files into this many pieces)
    jobs = 1

    def map(self, info: TxnInfo, groups: list[list[FileTask]], on_done: Callable[[list[FileOutcome]], None]) -> None:
        for i, g in enumerate(groups):
            on_done(run_tasks(info, g, f"p{os.getpid()}-{i}"))

    def close(self) -> None:
        pass

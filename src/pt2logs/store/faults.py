"""Named crash and pause points of the writers, for tests of every kill point.

``PT2LOGS_DIE_AFTER=<step>`` ends the process with ``os._exit(137)`` (as a SIGKILL would: no
cleanup, no ``finally``) right after that step. ``PT2LOGS_PAUSE_AT=<step>:<file>`` writes
``<file>.reached`` at that step and waits until ``<file>`` exists (another process decides when it
goes on). Neither is set in normal use; a check costs one dictionary lookup.
"""

from __future__ import annotations

import os
import time

#: a transaction (ingest or compaction), in order
TXN_STEPS = ("txn.data", "txn.files", "txn.commit", "txn.release")
#: one partition of ``pt2logs compact``, then the deletion of replaced files (``gc``), in order
COMPACT_STEPS = (
    "compact.data",
    "compact.commit",
    "compact.tombstone",
    "compact.release",
    "gc.data",
    "gc.done",
)


def step(name: str) -> None:
    if os.environ.get("PT2LOGS_DIE_AFTER") == name:
        os._exit(137)
    pause = os.environ.get("PT2LOGS_PAUSE_AT")
    if pause and pause.split(":", 1)[0] == name:
        flag = pause.split(":", 1)[1]
        with open(flag + ".reached", "w") as f:
            f.write(str(os.getpid()))
        while not os.path.exists(flag):
            time.sleep(0.05)

"""``os.fork`` for pt2logs' detached processes (the views file's writer, the answers' keeper).

A forked child inherits every object of its parent, DuckDB databases among them (a notebook's, a test
process's, the command's own). Each runs a scheduler of threads the child does not have; a database the child
frees (cyclic garbage its parent had not collected yet, found by the child's collector) joins threads that do
not exist: SIGSEGV in ``duckdb::TaskScheduler::~TaskScheduler``. :func:`fork` puts the parent's objects out of
the child's collector's reach (``gc.freeze``) and gives them back to the parent's at once; in the child they
stay frozen (it ends with ``os._exit``: nothing of the parent is ever freed there). The process pool's workers
do the same around their start (ingestion/engines/local.py).
"""

from __future__ import annotations

import gc
import os


def fork() -> int:
    """``os.fork()`` (0 in the child, the child's pid in the parent) with the parent's objects frozen in the
    child. A child must end with ``os._exit``."""
    thaw = not gc.get_freeze_count()  # (a caller that froze them keeps them frozen)
    if thaw:
        gc.freeze()
    try:
        pid = os.fork()
    except BaseException:
        if thaw:
            gc.unfreeze()
        raise
    if pid and thaw:
        gc.unfreeze()
    return pid

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

import contextlib
import gc
import os
from collections.abc import Callable


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


def detached(work: Callable[[], object], folder: str | None = None) -> bool:
    """Run ``work()`` in a process of its own session (forked twice: nothing is left for this process to reap;
    stdio on /dev/null; nice 5; any failure swallowed), not waiting for it. ``folder`` (a local warehouse's root):
    ``_keeping.<its pid>.tmp`` is made there before this returns and removed once the work is done (work in
    progress, as recovery and the tests' settled() read a ``.<pid>.tmp``). False when nothing was started."""
    if not hasattr(os, "fork"):
        return False
    try:
        pid = fork()
    except OSError:
        return False
    if pid == 0:
        made = None
        try:
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            rd, wd = os.pipe()
            worker = os.fork()
            if worker:
                if folder is not None:
                    with contextlib.suppress(OSError):
                        open(os.path.join(folder, f"_keeping.{worker}.tmp"), "wb").close()  # noqa: SIM115
                os.close(wd)
            else:
                os.close(wd)
                os.read(rd, 1)  # (until the marker is made)
                made = (
                    None if folder is None else os.path.join(folder, f"_keeping.{os.getpid()}.tmp")
                )
                with contextlib.suppress(OSError):
                    os.nice(5)  # (background work: the commands that follow come first)
                work()
        except BaseException:  # noqa: BLE001, S110 - best effort
            pass
        finally:
            if made is not None:
                with contextlib.suppress(OSError):
                    os.remove(made)
            os._exit(0)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    return True


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` lives (this one does; one of another user's: as far as this one can tell, yes)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def keeping(folder: str) -> bool:
    """Whether a :func:`detached` worker works in ``folder`` now: a ``_keeping.<pid>.tmp`` of a live process."""
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return any(
        n.startswith("_keeping.")
        and n.endswith(".tmp")
        and n[9:-4].isdigit()
        and pid_alive(int(n[9:-4]))
        for n in names
    )

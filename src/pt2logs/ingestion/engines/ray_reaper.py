"""The local Ray's reaper: when the ingest that started a local Ray ends, however it ends, no Ray process of it
outlives it.

Ray ties its head daemons to the driver (the kernel's parent-death signal), but not the processes the
raylet starts (the dashboard and runtime-env agents, workers): an ingest killed while ``ray.init`` starts
them (Ctrl-C, SIGKILL) left them running until they noticed (about 15 s, issue 31 item 8). So the engine
gives the local Ray a temp folder of its own (every Ray process of that instance names it on its command
line) and starts this script first, in a session of its own (a Ctrl-C to the terminal does not reach it),
holding the read end of a pipe whose write end only the ingest holds. When the pipe closes (the engine is
closed, or the ingest died, even by SIGKILL), the reaper ends every process whose command line names the
folder (SIGTERM, then SIGKILL after a grace), then removes the folder.

Run as a script (``python ray_reaper.py FOLDER``): it imports nothing of pt2logs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import time

#: seconds the processes get to end after SIGTERM before SIGKILL
GRACE_S = 3.0


def session_processes(folder: str) -> list:
    """The processes (psutil) whose command line names ``folder``, this one left out."""
    import psutil

    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if p.pid != os.getpid() and any(folder in a for a in p.info["cmdline"] or ()):
                found.append(p)
        except (psutil.Error, TypeError):
            continue
    return found


def reap(folder: str, grace_s: float = GRACE_S) -> int:
    """End the processes of the Ray session under ``folder``; how many there were."""
    import psutil

    procs = session_processes(folder)
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _gone, alive = psutil.wait_procs(procs, timeout=grace_s)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(alive, timeout=grace_s)
    return len(procs)


def main(folder: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the ingest's Ctrl-C is the ingest's
    try:
        while sys.stdin.buffer.read(65536):  # until the ingest closes its end, or dies
            pass
    except OSError:
        pass
    reap(folder)
    time.sleep(0.2)  # a process that was starting as we listed: once more
    reap(folder)
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1])

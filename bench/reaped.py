"""Run one command as a subreaper (Linux) and print, as JSON, what it cost the user and what it cost in all.

    python -m bench.reaped CMD [ARG ...]

``wall_s`` / ``cpu_s``: from its start until the command itself exits, and its CPU seconds (user + system,
with the children it waited for): what a user waits for. ``all_wall_s`` / ``all_cpu_s``: until every process
it started has ended, those it left running on their own too (``pt2logs ingest``'s views writer, which it
does not wait for), and all their CPU. ``peak_rss_mb``: the largest single process among them. The
command's output is read and thrown away; its exit status is ``rc``. Timed from inside this process, so its
own start is not counted.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def main(cmd: list[str]) -> dict:
    ctypes.CDLL(None).prctl(
        PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0
    )  # orphans of CMD are reparented here
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, err = p.communicate()
    wall = time.perf_counter() - t
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = r.ru_utime + r.ru_stime
    while True:  # the processes it left behind, reparented to this one
        try:
            os.wait()
        except ChildProcessError:
            break
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "rc": p.returncode,
        "wall_s": wall,
        "cpu_s": cpu,
        "all_wall_s": time.perf_counter() - t,
        "all_cpu_s": r.ru_utime + r.ru_stime,
        "peak_rss_mb": r.ru_maxrss / 1024,
        "err": err.decode(errors="replace")[-3000:],
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))

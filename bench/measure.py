"""Run a command and measure its wall time and peak RSS (via /usr/bin/time -v, else psutil polling)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass


@dataclass
class Measure:
    wall_s: float
    peak_rss_mb: float
    rc: int
    out: str
    cpu_s: float = float("nan")  # user + system CPU seconds of the command and its children
    #: CPU seconds the rest of the machine used meanwhile (other people's work on a shared machine)
    others_cpu_s: float = float("nan")


def _busy_s() -> float:
    """CPU seconds every core of the machine has spent busy since boot (/proc/stat; nan elsewhere)."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return float("nan")
    return (sum(v[:8]) - v[3] - v[4]) / os.sysconf(
        "SC_CLK_TCK"
    )  # all but idle and iowait (guest is in user)


def run(cmd: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> Measure:
    e = {**os.environ, **(env or {})}
    if shutil.which("time") or os.path.exists("/usr/bin/time"):
        busy = _busy_s()
        t = time.perf_counter()
        p = subprocess.run(
            ["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, env=e, cwd=cwd
        )
        wall = time.perf_counter() - t
        busy = _busy_s() - busy
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
        rss = int(m.group(1)) / 1024 if m else float("nan")
        cpu = sum(
            float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", p.stderr)
        ) or float("nan")
        return Measure(wall, rss, p.returncode, p.stdout + p.stderr, cpu, max(0.0, busy - cpu))
    import psutil

    t = time.perf_counter()
    proc = psutil.Popen(cmd, env=e, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    peak = 0
    while proc.poll() is None:
        try:
            rss = proc.memory_info().rss + sum(
                c.memory_info().rss for c in proc.children(recursive=True)
            )
            peak = max(peak, rss)
        except psutil.Error:
            pass
        time.sleep(0.02)
    out = proc.stdout.read().decode() if proc.stdout else ""
    return Measure(time.perf_counter() - t, peak / 2**20, proc.returncode, out)

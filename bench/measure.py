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


def run(cmd: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> Measure:
    e = {**os.environ, **(env or {})}
    if shutil.which("time") or os.path.exists("/usr/bin/time"):
        t = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, env=e, cwd=cwd)
        wall = time.perf_counter() - t
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
        rss = int(m.group(1)) / 1024 if m else float("nan")
        cpu = sum(float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", p.stderr)) or float("nan")
        return Measure(wall, rss, p.returncode, p.stdout + p.stderr, cpu)
    import psutil

    t = time.perf_counter()
    proc = psutil.Popen(cmd, env=e, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    peak = 0
    while proc.poll() is None:
        try:
            rss = proc.memory_info().rss + sum(c.memory_info().rss for c in proc.children(recursive=True))
            peak = max(peak, rss)
        except psutil.Error:
            pass
        time.sleep(0.02)
    out = proc.stdout.read().decode() if proc.stdout else ""
    return Measure(time.perf_counter() - t, peak / 2**20, proc.returncode, out)

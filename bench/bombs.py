"""Compression bombs: a real trace followed by gigabytes of zeros, or of newlines, gzipped to a few MB.

    python -m bench --only bombs                 # 5,000 MB of each (the reliability issue's cases)
    python -m bench --only bombs --bomb-mb 300

Each bomb is ingested by a child process (in-process engine, like ``--jobs 1``) that reports its own
peak RSS (VmHWM) at its end; a watchdog kills it past a ceiling, so an input that does not stay flat
cannot take the machine down (then the peak is the largest RSS the watchdog saw, marked as killed).
The memory bound of the issue is 300 MB for every input, compressed or not.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import zlib
from pathlib import Path

from bench import corpus

ROOT = Path(__file__).resolve().parents[1]
FILLS = {"zeros": b"\0", "newlines": b"\n"}

_CHILD = """
import json, re, sys, pt2logs
r = pt2logs.ingest([sys.argv[1]], sys.argv[2])
peak = int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1))
print(json.dumps({"events": r.events, "errors": r.errors, "warnings": r.warnings, "peak_kb": peak}))
"""


def make(dest: Path, fill: str, mb: int) -> Path:
    """The first real trace, then ``mb`` MB of the fill byte, through a streaming gzip writer."""
    path = dest / f"bomb_{fill}_{mb}mb" / "trace.log.gz"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    block = FILLS[fill] * (1 << 20)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        f.write(c.compress(corpus.source_traces()[0]))
        for _ in range(mb):
            f.write(c.compress(block))
        f.write(c.flush())
    tmp.replace(path)
    return path


def watch(proc, t: float, ceiling_mb: int, timeout_s: float) -> tuple[int, str | None]:
    """Sample a child's RSS until it ends; kill it past ``ceiling_mb`` or ``timeout_s`` (since ``t``).
    Returns the highest RSS seen and why it was killed (None: it ended by itself)."""
    import psutil

    seen, killed = 0, None
    while proc.poll() is None:
        try:
            seen = max(seen, proc.memory_info().rss)
        except psutil.Error:
            break
        if seen > ceiling_mb << 20:
            killed = f"killed past {ceiling_mb:,} MB"
        elif time.perf_counter() - t > timeout_s:
            killed = f"killed after {timeout_s:.0f} s"
        if killed:
            proc.kill()
            break
        time.sleep(0.01)
    return seen, killed


def measure(bomb: Path, wh: Path, ceiling_mb: int, timeout_s: float = 1200) -> dict:
    import json

    import psutil

    shutil.rmtree(wh, ignore_errors=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    t = time.perf_counter()
    proc = psutil.Popen(
        [sys.executable, "-c", _CHILD, str(bomb), str(wh)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    seen, killed = watch(proc, t, ceiling_mb, timeout_s)
    out, err = (b.decode(errors="replace") for b in proc.communicate())
    wall = time.perf_counter() - t
    m = re.search(r"^\{.*\}$", out, re.M)
    got = json.loads(m.group(0)) if m else {}
    return {
        "peak_rss_mb": got["peak_kb"] / 1024 if got else seen / 2**20,
        "wall_s": wall,
        "rc": proc.returncode,
        "killed": killed,
        "events": got.get("events"),
        "errors": got.get("errors"),
        "error_tail": None if got else (err.strip().splitlines() or [""])[-1][:300],
    }


def run_all(out: Path, mb: int, ceiling_mb: int = 2048) -> list[dict]:
    rows = []
    for fill in FILLS:
        bomb = make(out / "corpus", fill, mb)
        row = {
            "fill": fill,
            "content_mb": mb,
            "gz_mb": bomb.stat().st_size / 1e6,
            **measure(bomb, out / f"wh_bomb_{fill}", ceiling_mb),
        }
        rows.append(row)
    return rows

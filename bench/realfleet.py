"""A fleet of real-shaped runs, ingested as the issue did (issue 31 item 7): peak memory of ingest, compact,
the dashboard and a fleet-wide query, at a few fleet sizes.

Unlike bench/fleet.py (runs replicated inside DuckDB), this fleet goes through the whole pipeline: N run
folders, each a hard-linked copy of one of the sample runs (sample_traces/: traces, TORCH_LOGS captures,
counters) under a name of its own, its trace's name suffix its own (as torch's random one is: a copy of a run is
the same run, the content run id reads the name and head of its first log), so every run is a run of its own, every table has rows, and the fleet costs no disk. Then ``pt2logs ingest`` of the whole folder into
one warehouse, ``pt2logs compact``, ``pt2logs dashboard`` and ``pt2logs query cache_misses`` (table and CSV),
each a process of its own whose peak is the sum of its process tree's RSS, sampled every 50 ms (forked
workers count), and the high-water mark of the largest process (``/usr/bin/time``'s figure).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_traces"
#: the sample runs copied, the small ones (a fleet of thousands ingests in minutes on 2 cores): a failure,
#: a training step (forward + lazy backward), two ranks of DDP
RUNS = ["compile_failure", "train_step", "ddp_2rank"]
WORDS = ["llama", "gpt", "bert", "vit", "t5", "mixtral", "resnet", "whisper"]


def make_fleet(dest: Path, n_runs: int) -> Path:
    """``dest/fleet_<n>``: n run folders of hard links to the sample runs' files (made once)."""
    fleet = dest / f"real_fleet_{n_runs}"
    marker = fleet / ".complete"
    if marker.exists():
        return fleet
    runs = [SAMPLES / n for n in RUNS]
    for i in range(n_runs):
        src = runs[i % len(runs)]
        run = fleet / f"{WORDS[i % len(WORDS)]}-{i:05d}-{src.name}"
        for f in src.rglob("*"):
            if f.is_file():
                to = run / f.relative_to(src)
                to.parent.mkdir(parents=True, exist_ok=True)
                if f.name.startswith(
                    "dedicated_log_torch_trace_"
                ):  # torch's random suffix, the run's own
                    to = to.with_name(f.name.replace(".log", f"_{i:05d}.log"))
                if not to.exists():
                    os.link(f, to)
    marker.touch()
    return fleet


def measure(cmd: list[str], env: dict[str, str] | None = None) -> dict:
    """Wall and CPU seconds, the process tree's peak RSS (sum, sampled) and its largest process's peak."""
    import psutil

    src = os.environ.get("BENCH_SRC", str(ROOT / "src"))  # the code measured (e.g. a copy of main)
    e = {**os.environ, "PYTHONPATH": src, **(env or {})}
    t = time.perf_counter()
    p = psutil.Popen(
        ["/usr/bin/time", "-f", "%M %U %S", *cmd],
        env=e,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    tree = 0
    while p.poll() is None:
        try:
            kids = p.children(recursive=True)
            rss = sum(k.memory_info().rss for k in kids if k.name() != "time")
            tree = max(tree, rss)
        except psutil.Error:
            pass
        time.sleep(0.05)
    err = p.stderr.read().decode() if p.stderr else ""
    wall = time.perf_counter() - t
    last = err.strip().splitlines()[-1].split() if err.strip() else []
    try:
        peak_kb, user, sys_ = int(last[0]), float(last[1]), float(last[2])
    except (IndexError, ValueError):
        peak_kb, user, sys_ = 0, float("nan"), float("nan")
    return {
        "rc": p.returncode,
        "wall_s": round(wall, 2),
        "cpu_s": round(user + sys_, 2),
        "tree_peak_mb": round(tree / 2**20),
        "max_process_mb": round(peak_kb / 1024),
        "err": err[-400:] if p.returncode else "",
    }


def bench(dest: Path, sizes: list[int], jobs: int = 2) -> dict:
    """Per fleet size: ingest, compact, dashboard and query cache_misses (table, csv)."""
    py = [sys.executable, "-m", "pt2logs"]
    out: dict = {}
    for n in sizes:
        fleet = make_fleet(dest, n)
        ingested = (
            dest / f"real_fleet_wh_{n}"
        )  # ingested once per code measured (BENCH_REINGEST=0: reused)
        wh = dest / f"real_fleet_wh_{n}_work"  # a copy of it that compact rewrites
        r: dict = {}
        if not (ingested / ".ingested").exists() or os.environ.get("BENCH_REINGEST", "1") == "1":
            subprocess.run(["rm", "-rf", str(ingested)], check=True)
            r["ingest"] = measure([*py, "ingest", str(fleet), "-w", str(ingested), "-j", str(jobs)])
            (ingested / ".ingested").touch()
        subprocess.run(["rm", "-rf", str(wh)], check=True)
        subprocess.run(["cp", "-a", str(ingested), str(wh)], check=True)
        r["compact"] = measure([*py, "compact", "-w", str(wh)])
        r["dashboard"] = measure(
            [*py, "dashboard", "-w", str(wh), "-o", str(dest / f"real_fleet_{n}.html")]
        )
        r["query cache_misses (table)"] = measure([*py, "query", "cache_misses", "-w", str(wh)])
        r["query cache_misses -f csv"] = measure(
            [*py, "query", "cache_misses", "-w", str(wh), "-f", "csv"]
        )
        out[n] = r
        for k, v in r.items():
            print(n, k, v, flush=True)
    return out


if __name__ == "__main__":
    bench(Path(sys.argv[1]), [int(x) for x in sys.argv[2].split(",")])


def markdown(r: dict) -> list[str]:
    """The section of bench/RESULTS.md: per fleet size, each command's wall, CPU and peaks."""
    out = [
        "N run folders hard-linked from the sample runs compile_failure, train_step and ddp_2rank (each trace "
        "under a name of its own), ingested (`-j 2`) into one warehouse, then compact, the dashboard and "
        "`query cache_misses` (bench/realfleet.py). Tree peak: the command's process tree's RSS summed, "
        "sampled every 50 ms (forked workers count); max process: its largest process's high-water mark. "
        "The bound is 300 MB.",
        "",
        "| runs | command | wall s | CPU s | tree peak MB | max process MB | rc |",
        "|---|---|---|---|---|---|---|",
    ]
    for n, cmds in r.items():
        for cmd, m in cmds.items():
            out.append(
                f"| {int(n):,} | {cmd} | {m['wall_s']} | {m['cpu_s']} | **{m['tree_peak_mb']}** "
                f"| {m['max_process_mb']} | {m['rc']} |"
            )
    return out + [""]

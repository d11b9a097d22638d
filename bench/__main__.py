"""pt2logs benchmarks: ingest speed vs tlparse and vs a bare scan, memory, compression bombs, fleet queries, re-ingest.

    python -m bench                      # everything, writes bench/RESULTS.md
    python -m bench --quick              # small sizes (a smoke run, e.g. in CI)
    python -m bench --only ingest --sizes 200,1000
    python -m bench --only fleet --fleet-runs 10000
    python -m bench --only realfleet --realfleet-runs 500,2000  # peaks of ingest/compact/dashboard/query
    python -m bench --only storage                  # warehouse bytes ÷ input bytes, 100 runs
    python -m bench --only serve --serve-runs 10000 # pt2logs serve: page latency per route
    python -m bench --only commands                 # --help vs import click; summary/ranks/advise/diff vs the floor
    python -m bench --only bombs --bomb-mb 5000
    python -m bench --only bombs --bomb-before /work/main/src   # the readers' bombs also against other code
    python -m bench --only one_trace --peers-python /tmp/peers/bin/python  # one GPU trace vs tlhub, tlparse

Every comparison is measured side by side in one run, on the same files, on this machine.
Work files go to bench/out/ (ignored by git).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

import pt2logs
from bench import bombs, corpus, fleet, hostile
from bench.measure import Measure, run

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
PY = sys.executable
TLPARSE = shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")


def ingest_cmd(path: Path, wh: Path, jobs: int) -> list[str]:
    return [
        PY,
        "-m",
        "pt2logs",
        "ingest",
        str(path),
        "--warehouse",
        str(wh),
        "--jobs",
        str(jobs),
        "--json",
        "-q",
    ]


def fresh(p: Path) -> Path:
    shutil.rmtree(p, ignore_errors=True)
    return p


def mbps(mb: float, m: Measure) -> float:
    return mb / m.wall_s if m.wall_s > 0 else float("nan")


def native_vs_python(cmd, rounds: int = 2) -> dict:
    """The same ingest with the native splitter and with the Python one (PT2LOGS_NATIVE=0), interleaved
    A/B/A/B so that a machine shared with other work slows both alike: wall and CPU seconds of each run."""
    out: dict[str, list] = {"native": [], "python": []}
    for _ in range(rounds):
        for name, flag in (("native", "1"), ("python", "0")):
            m = run(cmd(), env={"PT2LOGS_NATIVE": flag}, cwd=str(ROOT))
            if m.rc != 0:
                raise SystemExit(f"pt2logs ({name} splitter) failed:\n{m.out[-3000:]}")
            out[name].append([m.wall_s, m.cpu_s])
    return out


#: rounds of the one-big-log contenders: the machine is shared and its speed drifts (the same ingest has taken
#: 40 % more CPU seconds from one minute to the next), so every contender runs once per round, interleaved, and
#: the best of each is compared; peak memory is the worst of the rounds
INGEST_ROUNDS = 3


def _best(ms: list[Measure]) -> Measure:
    return min(ms, key=lambda m: m.wall_s)


def bench_ingest(sizes: list[int], results: dict, rounds: int = INGEST_ROUNDS) -> None:
    rows = []
    for mb in sizes:
        log = corpus.big_log(OUT / "corpus", mb)
        size = corpus.size_mb(log)
        corpus.warm(log)
        contenders = {
            "floor": lambda log=log: run([PY, "-m", "bench.floor", str(log)], cwd=str(ROOT)),
            "bound": lambda log=log: run([PY, "-m", "bench.bound", str(log)], cwd=str(ROOT)),
            "pt2logs_1": lambda log=log: run(
                ingest_cmd(log, fresh(OUT / "wh_single"), 1), cwd=str(ROOT)
            ),
            "pt2logs_all": lambda log=log: run(
                ingest_cmd(log, fresh(OUT / "wh_all"), os.cpu_count() or 2), cwd=str(ROOT)
            ),
            "tlparse": lambda log=log: run(
                [
                    TLPARSE,
                    str(log),
                    "-o",
                    str(fresh(OUT / "tl_html")),
                    "--overwrite",
                    "--no-browser",
                ]
            ),
            "tlparse_plain": lambda log=log: run(
                [
                    TLPARSE,
                    str(log),
                    "-o",
                    str(fresh(OUT / "tl_plain")),
                    "--overwrite",
                    "--no-browser",
                    "--plain-text",
                ]
            ),
        }
        got: dict[str, list[Measure]] = {k: [] for k in contenders}
        for _ in range(rounds):
            for name, measure in contenders.items():
                m = measure()
                if m.rc != 0 and name.startswith("pt2logs"):
                    raise SystemExit(f"{name} failed:\n{m.out[-3000:]}")
                got[name].append(m)
        bounds = [json.loads(b.out[b.out.index("{") : b.out.rindex("}") + 1]) for b in got["bound"]]
        bound = min(bounds, key=lambda b: b["total_s"])
        floor, one, two, tl_html, tl_plain = (
            _best(got[k]) for k in ("floor", "pt2logs_1", "pt2logs_all", "tlparse", "tlparse_plain")
        )
        row_ab = native_vs_python(lambda log=log: ingest_cmd(log, fresh(OUT / "wh_ab"), 1))
        row = {
            "size_mb": round(size, 1),
            "floor_s": floor.wall_s,
            "pt2logs_1_s": one.wall_s,
            "pt2logs_all_s": two.wall_s,
            "tlparse_s": tl_html.wall_s,
            "tlparse_plain_s": tl_plain.wall_s,
            "floor_mbps": mbps(size, floor),
            "pt2logs_1_mbps": mbps(size, one),
            "pt2logs_all_mbps": mbps(size, two),
            "tlparse_mbps": mbps(size, tl_html),
            "tlparse_plain_mbps": mbps(size, tl_plain),
            "rss_pt2logs_1_mb": max(m.peak_rss_mb for m in got["pt2logs_1"]),
            "rss_pt2logs_all_mb": max(m.peak_rss_mb for m in got["pt2logs_all"]),
            "rss_tlparse_mb": max(m.peak_rss_mb for m in got["tlparse"]),
            "tlparse_rc": tl_html.rc,
            "rounds": {k: [m.wall_s for m in v] for k, v in got.items() if k != "bound"}
            | {"bound_cpu": [b["total_s"] for b in bounds]},
        }
        row["ab"] = row_ab
        row["x_tlparse"] = row["tlparse_s"] / row["pt2logs_all_s"]
        row["x_tlparse_plain"] = row["tlparse_plain_s"] / row["pt2logs_all_s"]
        row["x_floor"] = row["floor_s"] / row["pt2logs_all_s"]
        # the least native work a lossless ingest does (bench/bound.py), spread perfectly over every core
        row["bound_steps"] = bound["steps"]
        row["bound_cpu_s"] = bound["total_s"]
        row["cores"] = os.cpu_count() or 2
        row["bound_wall_s"] = bound["total_s"] / row["cores"]
        row["bound_x_floor"] = row["floor_s"] / row["bound_wall_s"]
        rows.append(row)
        print(json.dumps(row, default=lambda x: round(x, 3)), flush=True)
    results["ingest"] = rows


def bench_profile(mb: int, results: dict) -> None:
    from bench.profile import profile

    log = corpus.big_log(OUT / "corpus", mb)
    r = profile(str(log))
    r["size_mb"] = round(corpus.size_mb(log), 1)
    results["profile"] = r
    print(json.dumps(r, default=lambda x: round(x, 3)), flush=True)


def _json_of(out: str) -> dict:
    """The JSON object a bench helper printed (its output also holds /usr/bin/time's report)."""
    start = 0 if out.startswith("{") else out.find("\n{") + 1
    if start == 0 and not out.startswith("{"):
        return {}
    return json.JSONDecoder().raw_decode(out, start)[0]


def bench_many(n_runs: int, results: dict) -> None:
    root = corpus.many_runs(OUT / "corpus", n_runs)
    size = corpus.size_mb(root)
    corpus.warm(root)
    ab = native_vs_python(lambda: ingest_cmd(root, fresh(OUT / "wh_many_ab"), 1))
    cores = os.cpu_count() or 2
    # --jobs 1, all cores and tlparse (as its users run it on many jobs: one process per log, one after the other,
    # and all cores busy) interleaved, three rounds: other work on a shared machine slows them alike; the best of
    # each is compared (and the CPU seconds, which other work inflates less)
    rounds: dict[str, list] = {
        "jobs1": [],
        "jobs_all": [],
        "tlparse_each": [],
        "tlparse_each_all": [],
    }
    for _ in range(3):
        for name, jobs in (("jobs1", 1), ("jobs_all", cores)):
            m = run(ingest_cmd(root, fresh(OUT / f"wh_many_{name}"), jobs), cwd=str(ROOT))
            if m.rc != 0:
                raise SystemExit(f"pt2logs --jobs {jobs} failed:\n{m.out[-3000:]}")
            rounds[name].append(m)
        rounds["tlparse_each"].append(
            run(
                [PY, "-m", "bench.tlparse_each", str(root), str(fresh(OUT / "tl_each1"))],
                cwd=str(ROOT),
            )
        )
        rounds["tlparse_each_all"].append(
            run(
                [
                    PY,
                    "-m",
                    "bench.tlparse_each",
                    str(root),
                    str(fresh(OUT / "tl_eachn")),
                    "--jobs",
                    str(cores),
                ],
                cwd=str(ROOT),
            )
        )
    j1, j2, tl1, tln = (
        _best(rounds[k]) for k in ("jobs1", "jobs_all", "tlparse_each", "tlparse_each_all")
    )
    shutil.rmtree(OUT / "tl_each1", ignore_errors=True)
    shutil.rmtree(OUT / "tl_eachn", ignore_errors=True)
    row = {
        "runs": n_runs,
        "size_mb": round(size, 1),
        "jobs1_s": j1.wall_s,
        "jobs_all_s": j2.wall_s,
        "jobs1_mbps": mbps(size, j1),
        "jobs_all_mbps": mbps(size, j2),
        "speedup": j1.wall_s / j2.wall_s,
        "rss_jobs_all_mb": j2.peak_rss_mb,
        "ab": ab,
        "cores": cores,
        "jobs1_cpu_s": min(m.cpu_s for m in rounds["jobs1"]),
        "jobs_all_cpu_s": min(m.cpu_s for m in rounds["jobs_all"]),
        "rounds": {k: [[m.wall_s, m.cpu_s, m.others_cpu_s] for m in v] for k, v in rounds.items()},
        "tlparse_each_s": tl1.wall_s,
        "tlparse_each_mbps": mbps(size, tl1),
        "tlparse_each_all_s": tln.wall_s,
        "tlparse_each_all_mbps": mbps(size, tln),
        "tlparse_each": _json_of(tl1.out),
        "x_tlparse_each": tl1.wall_s / j2.wall_s,
        "x_tlparse_each_1": tl1.wall_s / j1.wall_s,
        "x_tlparse_each_all": tln.wall_s / j2.wall_s,
    }
    try:
        import ray  # noqa: F401

        r = run(
            [*ingest_cmd(root, fresh(OUT / "wh_many_ray"), os.cpu_count() or 2), "--engine", "ray"],
            cwd=str(ROOT),
        )
        row.update(
            ray_s=r.wall_s, ray_mbps=mbps(size, r), ray_speedup=j1.wall_s / r.wall_s, ray_rc=r.rc
        )
    except ImportError:
        row["ray_s"] = None
    print(json.dumps(row, default=lambda x: round(x, 3)), flush=True)
    results["many"] = row


def bench_reingest(n_runs: int, results: dict) -> None:
    root = corpus.many_runs(OUT / "corpus", n_runs, small=True)
    wh = fresh(OUT / "wh_reingest")
    corpus.warm(root)
    first = run(ingest_cmd(root, wh, os.cpu_count() or 2), cwd=str(ROOT))
    again = run(ingest_cmd(root, wh, os.cpu_count() or 2), cwd=str(ROOT))
    d = _json_of(again.out)
    row = {
        "runs": n_runs,
        "size_mb": round(corpus.size_mb(root), 1),
        "first_s": first.wall_s,
        "again_s": again.wall_s,
        "ratio_pct": 100 * again.wall_s / first.wall_s,
        "unchanged": d["runs_unchanged"],
        "new": d["runs_new"],
    }
    print(json.dumps(row, default=lambda x: round(x, 3)), flush=True)
    results["reingest"] = row


def bench_bombs(mb: int, results: dict, before: str | None = None, scale: float = 1.0) -> None:
    rows = bombs.run_all(OUT, mb)
    for row in rows:
        print(json.dumps(row, default=lambda x: round(x, 3)), flush=True)
    results["bombs"] = rows
    results["hostile"] = hostile.run_all(OUT, Path(before) if before else None, scale=scale)


def bench_fleet(n_runs: int, results: dict) -> None:
    t = time.perf_counter()
    wh = fleet.synthesize(OUT, n_runs)
    synth = time.perf_counter() - t
    times = fleet.time_queries(wh)
    dash = None
    html = OUT / "fleet_dashboard.html"
    m = run(
        [PY, "-m", "pt2logs", "dashboard", "--warehouse", str(wh), "--out", str(html)],
        cwd=str(ROOT),
    )
    if m.rc == 0:
        dash = m.wall_s
    peaks = [("dashboard", m.wall_s, m.peak_rss_mb, m.rc)]
    # the CLI's peaks over the fleet (issue 31 item 7): a whole fleet's result in the terminal table was 50 s, 1.7 GB
    for label, args in (
        ("query cache_misses (table)", ["query", "cache_misses"]),
        ("query cache_misses -f csv", ["query", "cache_misses", "-f", "csv"]),
    ):
        q = run(
            [PY, "-m", "pt2logs", *args, "--warehouse", str(wh)],
            env={**os.environ, "COLUMNS": "100"},
            cwd=str(ROOT),
        )
        peaks.append((label, q.wall_s, q.peak_rss_mb, q.rc))
    results["fleet"] = {
        "runs": fleet.run_count(wh),
        "synth_s": synth,
        "queries": times,
        "dashboard_s": dash,
        "dashboard_rc": m.rc,
        "peaks": peaks,
    }
    for name, s, n in times:
        print(f"  {name:32} {s * 1000:8.1f} ms  {n} rows", flush=True)
    print(f"  dashboard: {dash} s (rc {m.rc})", flush=True)
    for label, s, mb, rc in peaks:
        print(f"  {label:32} {s:6.1f} s  peak {mb:,.0f} MB  (rc {rc})", flush=True)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        import psutil

        mem = f"{psutil.virtual_memory().total / 2**30:.0f} GiB"
    except ImportError:
        mem = "?"
    return f"{os.cpu_count()} cores ({cpu}), {mem}, Python {platform.python_version()}, {platform.system()}"


def _saved(args: argparse.Namespace) -> dict:
    saved = OUT / ("results.quick.json" if args.quick else "results.json")
    return json.loads(saved.read_text()) if saved.exists() else {}


def write_results(results: dict, args: argparse.Namespace) -> Path:
    """RESULTS.md from this run's sections; the sections not run now stay as RESULTS.md had them."""
    from bench.report import keep_sections, markdown

    saved = OUT / ("results.quick.json" if args.quick else "results.json")
    results = {**_saved(args), **results}
    path = ROOT / "bench" / ("RESULTS.md" if not args.quick else "RESULTS.quick.md")
    text = markdown(
        results, machine(), " ".join(sys.argv[1:]) or "(defaults)", dt.datetime.now(dt.timezone.utc)
    )
    path.write_text(keep_sections(text, path.read_text()) if path.exists() else text)
    saved.write_text(json.dumps(results, indent=1, default=str))
    return path


def bytecode() -> None:
    """pt2logs compiled to bytecode once, as ``pip install .`` leaves it: every process the bench starts then
    loads it instead of compiling its source (about 0.3 CPU s a process where PYTHONDONTWRITEBYTECODE is set)."""
    import compileall

    compileall.compile_dir(str(Path(pt2logs.__file__).parent), quiet=1)


def main() -> None:
    ap = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--only",
        choices=[
            "ingest",
            "profile",
            "many",
            "reingest",
            "bombs",
            "fleet",
            "realfleet",
            "storage",
            "serve",
            "one_trace",
            "commands",
        ],
        action="append",
    )
    ap.add_argument("--sizes", default="200,1000", help="single-log sizes in MB (default 200,1000)")
    ap.add_argument("--many-runs", type=int, default=300)
    ap.add_argument("--reingest-runs", type=int, default=10000)
    ap.add_argument("--fleet-runs", type=int, default=10000)
    ap.add_argument(
        "--realfleet-runs",
        default="500,2000",
        help="fleet sizes of the real-shaped fleet (ingest, compact, dashboard, query peaks)",
    )
    ap.add_argument(
        "--serve-runs",
        type=int,
        default=10000,
        help="runs of the fleet `serve` is also timed at (0: samples only)",
    )
    ap.add_argument(
        "--cmd-fleet-runs",
        type=int,
        default=10000,
        help="runs of the fleet `commands` also times summary/ranks/advise/diff at (0: the 14 runs only)",
    )
    ap.add_argument(
        "--bomb-mb",
        type=int,
        default=5000,
        help="MB of zeros / newlines after the trace in each bomb",
    )
    ap.add_argument(
        "--bomb-before",
        metavar="SRC",
        help="also ingest the readers' bombs with PYTHONPATH=SRC (the code before a change)",
    )
    ap.add_argument(
        "--trace", help="one_trace: the trace (default: the biggest real GPU trace of the fixtures)"
    )
    ap.add_argument(
        "--peers-python",
        help="one_trace: the Python whose environment has tlhub and tlparse (default: this one)",
    )
    ap.add_argument("--one-trace-rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    args = ap.parse_args()
    if args.quick:
        args.sizes, args.many_runs, args.reingest_runs, args.fleet_runs, args.bomb_mb = (
            "20",
            20,
            200,
            200,
            100,
        )
        args.serve_runs = 200
        args.cmd_fleet_runs = 200
    OUT.mkdir(parents=True, exist_ok=True)
    bytecode()
    load = os.getloadavg()[
        0
    ]  # other work on the machine: wall times of this run are worth that much less
    only = set(
        args.only
        or [
            "ingest",
            "profile",
            "many",
            "reingest",
            "bombs",
            "fleet",
            "storage",
            "one_trace",
            "commands",
        ]
    )
    results: dict = {}
    if "ingest" in only:
        bench_ingest([int(s) for s in args.sizes.split(",")], results)
    if "profile" in only:
        bench_profile(int(args.sizes.split(",")[0]), results)
    if "many" in only:
        bench_many(args.many_runs, results)
    if "reingest" in only:
        bench_reingest(args.reingest_runs, results)
    if "bombs" in only:
        bench_bombs(args.bomb_mb, results, args.bomb_before, 0.05 if args.quick else 1.0)
    if "fleet" in only:
        bench_fleet(args.fleet_runs, results)
    if "realfleet" in only:
        from bench.realfleet import bench as bench_realfleet

        sizes = [int(x) for x in ("50" if args.quick else args.realfleet_runs).split(",")]
        results["realfleet"] = bench_realfleet(OUT, sizes)
    if "storage" in only:
        from bench.storage import storage

        results["storage"] = storage(100 if not args.quick else 10)
        print(json.dumps(results["storage"], default=lambda x: round(x, 2)), flush=True)
    if "one_trace" in only:
        from bench import one_trace

        trace = Path(args.trace) if args.trace else one_trace.default_trace()
        if trace is None:
            raise SystemExit("one_trace: no trace given (--trace) and none among the fixtures")
        results["one_trace"] = one_trace.bench(
            OUT, trace, args.peers_python, 2 if args.quick else args.one_trace_rounds
        )
        print(json.dumps(results["one_trace"], default=lambda x: round(x, 3)), flush=True)
    if "serve" in only:
        from bench.serve import bench as bench_serve

        results["serve"] = bench_serve(OUT, args.serve_runs)
        print(json.dumps(results["serve"], default=lambda x: round(x, 1)), flush=True)
    if "commands" in only:
        from bench.commands import bench as bench_commands

        results["commands"] = bench_commands(OUT, args.cmd_fleet_runs, 3 if args.quick else 5)
        print(json.dumps(results["commands"], default=lambda x: round(x, 3))[:3000], flush=True)
    when = (
        dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        + f"; load average {load:.1f} on {os.cpu_count()} cores when it started (above 1, other work shared the machine)"
    )
    results["measured_at"] = {**_saved(args).get("measured_at", {}), **dict.fromkeys(results, when)}
    print(f"wrote {write_results(results, args)}")


if __name__ == "__main__":
    main()

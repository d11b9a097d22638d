"""One real GPU trace, as users ingest it: each tool a whole process, interleaved rounds (issue 36).

    python -m bench --only one_trace [--trace FILE] [--peers-python PY] [--one-trace-rounds N]

Contenders, one after the other in every round, each from a fresh output folder:

- pt2logs: `pt2logs ingest FILE --warehouse W` (its defaults: --jobs all cores), Parquet, commit and the
  views file included;
- tlhub: its `tlhub.trace_parser.ingest_trace_dir(run_id, trace_dir, artifacts_root)` run as a process
  (`python -c ...`), the folder holding only FILE;
- tlparse: `tlparse FILE -o DIR --overwrite --no-browser` (its HTML report).

Each runs under :mod:`bench.reaped`: its wall and CPU until the command exits (what a user waits for), and
until every process it started has ended, with their CPU: ``pt2logs ingest`` leaves its views file to a
process it does not wait for, whose CPU is counted there, and the next contender starts only after it.

tlhub and tlparse come from PEERS_PYTHON's environment (default: this Python; `--peers-python` names another
one, e.g. a venv made with `pip install tlhub==0.3.5 tlparse==0.4.3`); a missing peer is left out and said so.
The default trace is the biggest real GPU trace of the shared fixtures. The best wall time of each is compared
(the machine is shared and its speed drifts), with the CPU seconds (user + system) of that round beside it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from bench.measure import Measure

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT.parent / "shared" / "fixtures"

TLHUB = (
    "import sys; from pathlib import Path; from tlhub.trace_parser import ingest_trace_dir; "
    "ingest_trace_dir('bench', Path(sys.argv[1]), Path(sys.argv[2]))"
)


def default_trace() -> Path | None:
    """The biggest real GPU trace among the shared fixtures (gpu/<scenario>/trace/*.log)."""
    logs = sorted(FIXTURES.glob("gpu/*/trace/*.log"), key=lambda p: p.stat().st_size)
    return logs[-1] if logs else None


def _has(python: str, module: str) -> bool:
    r = subprocess.run([python, "-c", f"import {module}"], capture_output=True)
    return r.returncode == 0


def _tlparse(python: str) -> str | None:
    exe = Path(python).parent / "tlparse"
    return str(exe) if exe.exists() else shutil.which("tlparse")


def _fresh(p: Path) -> Path:
    shutil.rmtree(p, ignore_errors=True)
    return p


def run(cmd: list[str], cwd: str | None = None) -> Measure:
    """``cmd`` under bench.reaped: wall and CPU of the command, and (``all``) of everything it started."""
    p = subprocess.run(
        [sys.executable, "-m", "bench.reaped", *cmd],
        capture_output=True,
        text=True,
        cwd=cwd or str(ROOT),
    )
    if p.returncode != 0:
        return Measure(float("nan"), float("nan"), p.returncode, p.stderr)
    import json

    r = json.loads(p.stdout)
    m = Measure(r["wall_s"], r["peak_rss_mb"], r["rc"], r["err"], r["cpu_s"])
    m.all_wall_s, m.all_cpu_s = r["all_wall_s"], r["all_cpu_s"]  # type: ignore[attr-defined]
    return m


def bench(out: Path, trace: Path, peers_python: str | None = None, rounds: int = 5) -> dict:
    py = sys.executable
    peers = peers_python or py
    # tlhub reads a folder: one holding only this trace (a link: the bytes read are the trace's own)
    tdir = _fresh(out / "one_trace_in")
    tdir.mkdir(parents=True)
    (tdir / trace.name).symlink_to(trace.resolve())
    trace.read_bytes()  # in the page cache for every contender alike
    contenders = {
        "pt2logs": lambda: run(
            [
                py,
                "-m",
                "pt2logs",
                "ingest",
                str(trace),
                "--warehouse",
                str(_fresh(out / "one_trace_wh")),
                "-q",
            ],
            cwd=str(ROOT),
        )
    }
    missing = []
    if _has(peers, "tlhub.trace_parser"):
        contenders["tlhub"] = lambda: run(
            [peers, "-c", TLHUB, str(tdir), str(_fresh(out / "one_trace_tlhub"))]
        )
    else:
        missing.append("tlhub")
    tl = _tlparse(peers)
    if tl:
        contenders["tlparse"] = lambda: run(
            [
                tl,
                str(trace),
                "-o",
                str(_fresh(out / "one_trace_tlparse")),
                "--overwrite",
                "--no-browser",
            ]
        )
    else:
        missing.append("tlparse")
    got: dict[str, list[Measure]] = {k: [] for k in contenders}
    for _ in range(rounds):
        for name, measure in contenders.items():
            m = measure()
            if m.rc != 0:
                raise SystemExit(f"{name} failed on {trace}:\n{m.out[-3000:]}")
            got[name].append(m)
    best = {k: min(v, key=lambda m: m.wall_s) for k, v in got.items()}
    row: dict = {
        "trace": str(trace.relative_to(FIXTURES)) if trace.is_relative_to(FIXTURES) else str(trace),
        "size_mb": trace.stat().st_size / 1e6,
        "rounds": {k: [[m.wall_s, m.cpu_s] for m in v] for k, v in got.items()},
        "best": {k: [m.wall_s, m.cpu_s, m.peak_rss_mb] for k, m in best.items()},
        # until every process a contender started had ended (pt2logs' views writer), and their CPU
        "best_all": {k: [m.all_wall_s, m.all_cpu_s] for k, m in best.items()},  # type: ignore[attr-defined]
        "missing": missing,
        "versions": _versions(peers),
    }
    for peer in ("tlhub", "tlparse"):
        if peer in best:
            row[f"x_{peer}"] = best["pt2logs"].wall_s / best[peer].wall_s
            row[f"x_{peer}_cpu"] = best["pt2logs"].cpu_s / best[peer].cpu_s
    for p in ("one_trace_in", "one_trace_wh", "one_trace_tlhub", "one_trace_tlparse"):
        shutil.rmtree(out / p, ignore_errors=True)
    return row


def _versions(python: str) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json\n"
        "v = {}\n"
        "for n in ('tlhub', 'tlparse'):\n"
        "    try: v[n] = m.version(n)\n"
        "    except m.PackageNotFoundError: pass\n"
        "print(json.dumps(v))"
    )
    r = subprocess.run([python, "-c", code], capture_output=True, text=True)
    import json

    return json.loads(r.stdout) if r.returncode == 0 else {}


def markdown(x: dict, title: list[str]) -> list[str]:
    def f(v: float) -> str:
        return f"{v:.2f}"

    names = [k for k in ("pt2logs", "tlhub", "tlparse") if k in x["best"]]
    vers = ", ".join(f"{k} {v}" for k, v in x["versions"].items())
    out = [
        *title,
        f"`python -m bench --only one_trace`: the real GPU trace `{x['trace']}` ({x['size_mb']:.1f} MB), each tool "
        f"as a whole process ({vers}): `pt2logs ingest FILE` into a new warehouse (defaults), tlhub's "
        "`ingest_trace_dir` as a process, `tlparse FILE -o DIR --overwrite --no-browser`. "
        f"{len(x['rounds']['pt2logs'])} rounds, interleaved; the best wall time of each, with the CPU seconds "
        "(user + system) of that run.",
        "",
        "| tool | best wall s | its CPU s | with what it left running: wall s, CPU s | peak RSS MB |",
        "|---|---|---|---|---|",
    ]
    for k in names:
        w, c, rss = x["best"][k]
        aw, ac = x.get("best_all", {}).get(k, [float("nan")] * 2)
        out.append(f"| {k} | {f(w)} | {f(c)} | {f(aw)}, {f(ac)} | {rss:,.0f} |")
    out.append("")
    ratios = []
    for peer, target in (("tlhub", 0.5), ("tlparse", 0.3)):
        if f"x_{peer}" in x:
            ratios.append(
                f"pt2logs ÷ {peer}: **{x[f'x_{peer}']:.2f}×** wall, {x[f'x_{peer}_cpu']:.2f}× CPU "
                f"(issue 36's target: ≤ {target}× wall)"
            )
    out += ["; ".join(ratios) + "." if ratios else "", ""]
    out.append(
        "Wall seconds of every round: "
        + "; ".join(f"{k} " + " / ".join(f(w) for w, _ in x["rounds"][k]) for k in names)
        + "."
    )
    if x["missing"]:
        out.append(f"Not run (not installed in the peers' Python): {', '.join(x['missing'])}.")
    return out + [""]

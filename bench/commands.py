"""Speed as users feel it (issue 36): a command's start, and the commands about one run, each against its floor.

    python -m bench --only commands                       # 14 small runs, and the fleet of --cmd-fleet-runs
    python -m bench --only commands --cmd-fleet-runs 0    # the 14 runs only

- start: ``pt2logs --help`` and ``pt2logs summary --help`` against ``python -c "import click"`` (what any click
  program pays before it does anything);
- commands: ``summary``, ``ranks``, ``advise`` and ``diff`` on a warehouse of 14 small runs (sample_traces/ and real
  fixtures) against the floor of any Python command that answers from DuckDB: start Python, import duckdb,
  connect, run one query over the warehouse's files;
- the same commands on the synthesized fleet (bench/fleet.py), against 1 s.

On the 14 runs each command is timed twice per round: first cold (``(first)``: its run's answers not kept, the
``_answers`` folder removed before it; the process it forks to keep them after its output is waited for, its CPU not
counted: it is not the command's), then warm (the answers kept by that first call, read: what every later command
about the run costs). At the fleet (one transaction of thousands of runs keeps none) the two are the same: warm only.

Every contender runs once per round, interleaved, for ROUNDS rounds (the machine is shared: its speed drifts);
the best wall and the best CPU seconds (user + system, the children's getrusage) of each are compared, each ratio within
this one run.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import sys
from pathlib import Path

from bench.measure import Measure, run

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
#: the real fixtures, where the tests find them (tests/conftest.py)
FIXTURES = Path(os.environ.get("PT2LOGS_FIXTURES", ROOT.parent / "shared" / "fixtures"))

#: rounds of every comparison (each contender once per round, interleaved)
ROUNDS = 5

#: the 14 runs: the sample traces (5 runs), the GPU fixtures (5) and four tlparse test logs (one a 2-rank folder)
TLPARSE_LOGS = ("simple.log", "comp_failure.log", "cache_hit_miss.log", "multi_rank_logs")

#: the runs each command is asked about, by name (the newest of the first name there is; the fleet holds copies
#: of the sample traces only): summary and advise a run with recompiles, ranks a 2-rank DDP run, diff two runs of
#: one workload
RUN_OF = {
    "summary": ("recompile_causes", "recompiles"),
    "advise": ("recompile_causes", "recompiles"),
    "ranks": ("ddp_2rank",),
}
DIFF_OF = "graph_breaks"


def inputs() -> list[str]:
    out = [str(ROOT / "sample_traces"), str(FIXTURES / "gpu")]
    return out + [str(FIXTURES / "tlparse" / n) for n in TLPARSE_LOGS]


def small_warehouse(out: Path) -> Path:
    """The 14-run warehouse (made once; bench/out/cmd_wh14)."""
    wh = out / "cmd_wh14"
    if (wh / ".complete").exists():
        # what an ingest of this code keeps (outcomes, advice items: pt2logs.query.kept_cache), kept for a warehouse
        # made by older code, whose kept rows are under other keys (nothing to do when they are there)
        keep = f"from pt2logs.query.kept_cache import keep; keep({str(wh)!r})"
        run([PY, "-c", keep], cwd=str(ROOT))
        return wh
    shutil.rmtree(wh, ignore_errors=True)
    m = run([PY, "-m", "pt2logs", "ingest", *inputs(), "--warehouse", str(wh), "-q"], cwd=str(ROOT))
    if m.rc != 0:
        raise SystemExit(f"ingest of the 14 runs failed:\n{m.out[-3000:]}")
    (wh / ".complete").write_text("ok")
    return wh


def _runs(wh: Path) -> list[tuple[str, str]]:
    """(run_id, name) of every run, newest first."""
    import duckdb

    return (
        duckdb.connect()
        .execute(
            f"SELECT run_id, name FROM read_parquet('{wh}/runs/**/*.parquet') "
            "QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY committed_at DESC) = 1 "
            "ORDER BY started_at DESC, run_id"
        )
        .fetchall()
    )


def command_lines(wh: Path) -> dict[str, list[str]]:
    """The four commands' argument lists for ``wh`` (runs picked by name, else the newest ones)."""
    runs = _runs(wh)

    def named(names: tuple[str, ...], nth: int = 0) -> str:
        for name in names:
            ids = [r for r, n in runs if n == name or n.startswith(name + " #")]
            if len(ids) > nth:
                return ids[nth]
        return runs[nth][0]

    w = ["--warehouse", str(wh)]
    return {
        "summary": ["summary", named(RUN_OF["summary"]), *w],
        "ranks": ["ranks", named(RUN_OF["ranks"]), *w],
        "advise": ["advise", named(RUN_OF["advise"]), *w],
        "diff": ["diff", named((DIFF_OF,), 1), named((DIFF_OF,), 0), *w],
    }


def floor_cmd(wh: Path) -> list[str]:
    """Start Python, import duckdb, connect, run one query over the warehouse's files."""
    sql = f"SELECT count(*) FROM read_parquet('{wh}/runs/**/*.parquet')"
    return [PY, "-c", f"import duckdb; duckdb.connect().execute({sql!r}).fetchall()"]


def _children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


#: the suffix of a cold contender's name (bench_commands)
FIRST = " (first)"


def _keepers_done(cmd: list[str], timeout: float = 120.0) -> None:
    """Until no process of ``cmd``'s command line lives: the process a command forked to keep its answers
    (pt2logs.query.answer_keeper) has the command's own."""
    import time

    import psutil

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = []
        for p in psutil.process_iter(["cmdline", "status"]):
            with contextlib.suppress(psutil.Error):
                if (p.info["cmdline"] or [])[1:] == cmd[1:] and p.info[
                    "status"
                ] != psutil.STATUS_ZOMBIE:
                    alive.append(p.pid)
        if not alive:
            return
        time.sleep(0.05)
    raise SystemExit(f"the keep of {' '.join(cmd)} still runs after {timeout} s")


def _rounds(
    contenders: dict[str, list[str]], rounds: int, cold: Path | None = None
) -> dict[str, list[Measure]]:
    """Each contender once per round; one named ``... (first)`` runs with ``cold``'s kept answers removed, and
    the keep it starts is waited for after it."""
    env = {"COLUMNS": "100"}
    got: dict[str, list[Measure]] = {k: [] for k in contenders}
    for _ in range(rounds):
        for name, cmd in contenders.items():
            if cold is not None and name.endswith(FIRST):
                shutil.rmtree(cold / "_answers", ignore_errors=True)
            cpu = _children_cpu_s()
            m = run(cmd, env=env, cwd=str(ROOT))
            # the CPU seconds of the command (and /usr/bin/time's few), to the microsecond: /usr/bin/time
            # prints hundredths, a third of `import click`
            m.cpu_s = _children_cpu_s() - cpu
            if m.rc != 0:
                raise SystemExit(f"{name} failed ({' '.join(cmd)}):\n{m.out[-3000:]}")
            got[name].append(m)
            if cold is not None and name.endswith(FIRST):
                _keepers_done(cmd)
    return got


def _best(ms: list[Measure]) -> dict:
    return {
        "wall_s": min(m.wall_s for m in ms),
        "cpu_s": min(m.cpu_s for m in ms),
        "rss_mb": max(m.peak_rss_mb for m in ms),
        "rounds": [[m.wall_s, m.cpu_s] for m in ms],
    }


def _ratios(got: dict[str, list[Measure]], base: str) -> dict[str, dict]:
    best = {k: _best(v) for k, v in got.items()}
    for b in best.values():
        b["x_wall"] = b["wall_s"] / best[base]["wall_s"]
        b["x_cpu"] = b["cpu_s"] / best[base]["cpu_s"]
    return best


def bench_start(rounds: int = ROUNDS) -> dict:
    """``pt2logs --help`` and ``pt2logs summary --help`` against ``import click``."""
    got = _rounds(
        {
            "import click": [PY, "-c", "import click"],
            "pt2logs --help": [PY, "-m", "pt2logs", "--help"],
            "pt2logs summary --help": [PY, "-m", "pt2logs", "summary", "--help"],
        },
        rounds,
    )
    return _ratios(got, "import click")


def bench_commands(wh: Path, rounds: int = ROUNDS, cold: bool = True) -> dict:
    """summary, ranks, advise, diff on ``wh`` against the Python + DuckDB floor: with ``cold``, each first with its
    answers not kept, then kept."""
    lines = command_lines(wh)
    contenders = {"floor": floor_cmd(wh)}
    for k, v in lines.items():
        if cold:
            contenders[k + FIRST] = [PY, "-m", "pt2logs", *v]
        contenders[k] = [PY, "-m", "pt2logs", *v]
    got = _rounds(contenders, rounds, wh if cold else None)
    out = _ratios(got, "floor")
    return {"warehouse": str(wh), "runs": len(_runs(wh)), "commands": lines, "results": out}


def bench(out: Path, fleet_runs: int, rounds: int = ROUNDS) -> dict:
    res: dict = {"rounds": rounds, "start": bench_start(rounds)}
    res["small"] = bench_commands(small_warehouse(out), rounds)
    if fleet_runs:
        from bench import fleet

        res["fleet"] = bench_commands(
            fleet.synthesize(out, fleet_runs), max(2, rounds // 2), cold=False
        )
    return res


def _row(name: str, b: dict, base: str | None = None) -> str:
    ratio = f"**{b['x_wall']:.2f}×** | **{b['x_cpu']:.2f}×**" if base else "– | –"
    return f"| {name} | {b['wall_s']:.3f} | {b['cpu_s']:.3f} | {ratio} | {b['rss_mb']:,.0f} |"


def _head(base: str) -> list[str]:
    return [
        f"| command | best wall s | best CPU s | × {base} (wall) | × {base} (CPU) | peak RSS MB |",
        "|---|---|---|---|---|---|",
    ]


def markdown(r: dict) -> list[str]:
    """The section of RESULTS.md (the measured_at line is the caller's)."""
    x = r["commands"]
    out = [
        f"Each contender once per round, interleaved, {x['rounds']} rounds; best wall and best CPU (user + system, "
        '`getrusage` of the children) of each; the ratios within this run. Start: against `python -c "import click"`. '
        "Commands: against the floor of any Python command that answers from DuckDB (start Python, import duckdb, "
        "connect, one query over the warehouse's `runs` files). On the 14 runs each command first cold (its run's "
        "answers not kept: the first command about a run; the process it forks after its output to keep them waited "
        "for and not counted), then warm (the answers that call kept: every later command about the run).",
        "",
        "Start:",
        "",
        *_head("import click"),
    ]
    for name, b in x["start"].items():
        out.append(_row(f"`{name}`", b, None if name == "import click" else "import click"))
    for key, title in (("small", "runs"), ("fleet", "runs (synthesized fleet)")):
        if key not in x:
            continue
        s = x[key]
        out += ["", f"{s['runs']:,} {title}:", "", *_head("floor")]
        for name, b in s["results"].items():
            base = name.removesuffix(FIRST)
            label = (
                "floor"
                if name == "floor"
                else f"`pt2logs {' '.join(s['commands'][base][:-2])}`"
                + (", first call (answers not kept)" if name != base else ", answers kept")
            )
            out.append(_row(label, b, None if name == "floor" else "floor"))
    return out + [""]


def targets(r: dict) -> list[tuple[str, str, bool]]:
    """The issue's targets for these lines: start ≤ 1.5× import click; the commands ≤ 2× the floor on 14 runs
    and ≤ 1 s at the fleet (wall and CPU given; met on CPU, which other work inflates less)."""
    if "commands" not in r:
        return []
    x, rows = r["commands"], []
    for name, b in x["start"].items():
        if name != "import click":
            rows.append(
                (
                    f"`{name}` ≤ 1.5× `import click`",
                    f"{b['x_cpu']:.2f}× CPU, {b['x_wall']:.2f}× wall",
                    b["x_cpu"] <= 1.5,
                )
            )
    s = x["small"]
    for name, b in s["results"].items():
        if name != "floor":
            rows.append(
                (
                    f"`{name.removesuffix(FIRST)}` on {s['runs']} runs"
                    + (" (first call, answers not kept)" if name.endswith(FIRST) else "")
                    + " ≤ 2× the Python + DuckDB floor",
                    f"{b['x_cpu']:.2f}× CPU, {b['x_wall']:.2f}× wall",
                    b["x_cpu"] <= 2,
                )
            )
    if "fleet" in x:
        f = x["fleet"]
        for name, b in f["results"].items():
            if name != "floor":
                rows.append(
                    (
                        f"`{name}` at {f['runs']:,} runs ≤ 1 s",
                        f"{b['wall_s']:.2f} s wall, {b['cpu_s']:.2f} s CPU",
                        b["wall_s"] <= 1,
                    )
                )
    return rows


if __name__ == "__main__":  # a quick look without RESULTS.md: python -m bench.commands [FLEET_RUNS]
    import json

    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    res = bench(
        out, int(sys.argv[1]) if len(sys.argv) > 1 else 0, int(os.environ.get("ROUNDS", ROUNDS))
    )
    print("\n".join(markdown({"commands": res})))
    print(json.dumps(res, default=lambda v: round(v, 3))[:2000])

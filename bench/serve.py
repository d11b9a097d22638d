"""Page latency of ``pt2logs serve``: the median of each route over the sample warehouse and over a
synthesized fleet (bench/fleet.py), the app served by uvicorn from a thread and fetched over HTTP.

    python -m bench --only serve                        # samples + 10,000 runs
    python -m bench --only serve --serve-runs 1000
    python -m bench.serve WAREHOUSE                     # one warehouse, printed

Each route's first visit is reported beside its median: the warm-up fetch, and for the run, diff and compile pages
a fetch of runs no page read before (no answers kept for them, their graphs not highlighted), CPU of the process
beside wall (the thread that keeps a run's answers after its first page waited for, not counted in the next).
"""

from __future__ import annotations

import resource
import statistics
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pt2logs
from bench import fleet

ROOT = Path(__file__).resolve().parents[1]
#: fetches of each route after one warm-up (the median is reported): at the samples, and at the fleet
REPEAT, FLEET_REPEAT = 5, 3
#: first visits of the run, diff and compile pages (the median is reported), of runs never read
FIRSTS = 3


def routes(wh: str) -> list[tuple[str, str, list[str]]]:
    """(route, URL path, the paths of its first visits) of every page kind, on a real run, compile, site and recompile
    of ``wh``; the run, diff and compile pages' first visits are about runs no other route reads."""
    con = pt2logs.connect(wh)
    run, rank, cid, prev = con.execute(
        "SELECT run_id, rank, compile_id, prev_compile_id FROM recompiles x WHERE prev_compile_id IS NOT NULL AND 2 = "
        "(SELECT count(DISTINCT compile_id) FROM events e WHERE e.run_id = x.run_id AND e.rank IS NOT DISTINCT FROM x.rank "
        "AND e.compile_id IN (x.compile_id, x.prev_compile_id) AND coalesce(e.artifact_name, e.event_type) = 'dynamo_output_graph') "
        "ORDER BY run_id DESC, compile_id LIMIT 1"
    ).fetchone()
    ranks = f"&rank_a={rank}&rank_b={rank}" if rank is not None else ""
    other = con.execute(
        "SELECT run_id FROM runs WHERE run_id <> ? ORDER BY started_at DESC LIMIT 1", [run]
    ).fetchone()[0]
    site = con.execute(
        "SELECT coalesce(break_key, gb_id, gb_type) FROM graph_breaks GROUP BY 1 ORDER BY count(*) DESC "
        "LIMIT 1"
    ).fetchone()[0]
    # the first visits: runs no other route reads, in an order unlike the ids' (three run pages and three diffs where
    # the warehouse has the runs, else one of each)
    fresh = [
        r[0]
        for r in con.execute(
            "SELECT run_id FROM runs WHERE run_id NOT IN (?, ?) ORDER BY hash(run_id), run_id LIMIT ?",
            [run, other, 3 * FIRSTS],
        ).fetchall()
    ]
    # compiles whose Dynamo graphs no page showed before (highlighted on their first visit; the run pages highlight
    # none), each of another run: bench/fleet.py's runs are copies of a few, so a run never read may show graphs seen
    fc = con.execute(
        "SELECT run_id, compile_id, rank FROM events WHERE coalesce(artifact_name, event_type) = 'dynamo_output_graph' "
        "AND compile_id IS NOT NULL AND run_id NOT IN (?, ?) AND md5(payload) NOT IN (SELECT md5(payload) FROM events "
        "WHERE run_id = ? AND payload IS NOT NULL) "
        "QUALIFY row_number() OVER (PARTITION BY md5(payload) ORDER BY hash(run_id), run_id, compile_id DESC, rank) = 1 "
        "AND row_number() OVER (PARTITION BY run_id ORDER BY compile_id DESC, rank) = 1 "
        "ORDER BY hash(run_id), run_id LIMIT ?",
        [run, other, run, FIRSTS],
    ).fetchall()
    con.close()
    from pt2logs.serve.render import compile_url, query_url, run_url, seg, site_url

    n = FIRSTS if len(fresh) >= 3 * FIRSTS else 1
    first_runs = [run_url(r) for r in fresh[:n]]
    pairs = fresh[n : 3 * n]
    first_diffs = [
        f"/diff/{seg(x)}/{seg(y)}" for x, y in zip(pairs[::2], pairs[1::2], strict=False)
    ]
    return [
        ("/", "/", []),
        ("/runs", "/runs", []),
        ("/runs?q=&sort=compile_s", "/runs?q=a&sort=compile_s", []),
        ("/runs/{run}", run_url(run), first_runs),
        ("/runs/{run}/compiles/{id}", compile_url(run, cid, rank), [compile_url(*c) for c in fc]),
        ("/sites/{site}", site_url(site), []),
        ("/diff/{a}/{b}", f"/diff/{other}/{run}", first_diffs),
        (
            "/diff/{a}/{a}?compile_a&compile_b",
            f"/diff/{run}/{run}?compile_a={prev}&compile_b={cid}{ranks}",
            [],
        ),
        ("/query/graph_break_hotspots", query_url("graph_break_hotspots"), []),
        ("/query/runs?format=json", query_url("runs", {"format": "json"}), []),
    ]


def time_routes(wh: str, repeat: int = REPEAT) -> dict[str, Any]:
    """Each route's median with the page cache off (what a page costs to make) and on (a page seen before)."""
    from pt2logs.cli.outputs import OUTPUT_FORMATS
    from pt2logs.serve.app import create_app

    t0 = time.perf_counter()
    app = create_app(
        wh, {"json": OUTPUT_FORMATS["json"], "csv": OUTPUT_FORMATS["csv"]}, cache_pages=0
    )
    start_s = time.perf_counter() - t0
    # every run's outcome is computed in the background at start (pt2logs.serve.connection): timed once there
    app.state.store.outcomes_ready.wait(600)
    outcomes_s = time.perf_counter() - t0
    rows = _fetch(app, routes(wh), repeat)
    app.state.cache.entries = 256
    for row, hit in zip(rows, _fetch(app, routes(wh), repeat, first=False), strict=True):
        row["cached_ms"] = hit["median_ms"]
    app.state.store.close()
    return {
        "runs": fleet.run_count(Path(wh)),
        "start_s": start_s,
        "outcomes_s": outcomes_s,
        "routes": rows,
    }


def _cpu() -> float:
    """CPU seconds of this process, every thread (the server's among them)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _settle(app: Any) -> None:
    """The answers a page started keeping (pt2logs.serve.connection, a thread) kept before the next fetch."""
    keeper = getattr(app.state.store, "_keeper", None)
    if keeper is not None:
        keeper.join(600)


def _get(url: str) -> tuple[bytes, int, float, float]:
    """(body, status, wall s, CPU s of the process) of one fetch."""
    t, c = time.perf_counter(), _cpu()
    try:
        with urllib.request.urlopen(url, timeout=600) as r:
            body, status = r.read(), r.status
    except urllib.error.HTTPError as e:  # recorded, not fatal: the table says which route failed
        body, status = e.read(), e.code
    return body, status, time.perf_counter() - t, _cpu() - c


def _fetch(
    app: Any, paths: list[tuple[str, str, list[str]]], repeat: int, first: bool = True
) -> list[dict[str, Any]]:
    """Each route's median (and CPU median) of ``repeat`` fetches after a warm-up; with ``first``, the warm-up (the
    process's first page of that kind) and the route's first visit: the warm-up again, or for the run, diff and
    compile pages the median of fetches after it about runs no page read before."""
    from pt2logs.serve.server import Background

    rows = []
    with Background(app) as url:
        base = url.rstrip("/")
        for name, path, fresh in paths:
            times, cpus, size, status, warm, once = [], [], 0, 0, (0.0, 0.0), []
            for i in range(repeat + 1):
                _settle(app)
                body, status, wall, cpu = _get(base + path)
                size = len(body)
                if i:  # the first fetch warms DuckDB's caches
                    times.append(wall)
                    cpus.append(cpu)
                    continue
                warm = (wall, cpu)
                for f in fresh if first else []:
                    _settle(app)
                    once.append(_get(base + f)[2:])
            once = once or [warm]
            rows.append(
                {
                    "route": name,
                    "median_ms": 1000 * statistics.median(times),
                    "max_ms": 1000 * max(times),
                    "cpu_ms": 1000 * statistics.median(cpus),
                    "warmup_ms": 1000 * warm[0],
                    "warmup_cpu_ms": 1000 * warm[1],
                    "first_ms": 1000 * statistics.median(w for w, _ in once),
                    "first_cpu_ms": 1000 * statistics.median(c for _, c in once),
                    "firsts": len(once),
                    "kb": size / 1024,
                    "status": status,
                }
            )
    return rows


def bench(out: Path, n_runs: int) -> dict[str, Any]:
    samples = out / "serve_samples"
    if not (samples / "_meta.json").exists():
        pt2logs.ingest([str(ROOT / "sample_traces")], str(samples))
    res = {"samples": time_routes(str(samples))}
    if n_runs:
        res["fleet"] = time_routes(str(fleet.synthesize(out, n_runs)), FLEET_REPEAT)
    return res


def _cells(r: dict[str, Any]) -> str:
    nan = float("nan")
    pairs = (("median_ms", "cpu_ms"), ("first_ms", "first_cpu_ms"), ("warmup_ms", "warmup_cpu_ms"))
    return "".join(f" {r.get(w, nan):,.0f} / {r.get(c, nan):,.0f} |" for w, c in pairs) + (
        f" {r.get('cached_ms', nan):,.1f} |"
    )


def markdown(x: dict[str, Any], title: list[str]) -> list[str]:
    """The RESULTS.md section: one row per route, the median and the first visit at the samples and at the fleet."""
    big = x.get("fleet")
    head = f"| route | {x['samples']['runs']} runs: median | first visit | warm-up | cached |" + (
        f" {big['runs']:,} runs: median | first visit | warm-up | cached |" if big else ""
    )
    out = [
        *title,
        "`python -m bench --only serve`: each page kind fetched over HTTP from the app served by uvicorn in a "
        f"thread, {REPEAT} times after a warm-up ({FLEET_REPEAT} at the fleet), with the page cache off (what a page costs "
        "to make) and on (`cached`: a page seen before over the same commits); the sample warehouse (sample_traces/)"
        + (", and the synthesized fleet of bench/fleet.py" if big else "")
        + ". One DuckDB connection, pages one at a time. Wall ms / CPU ms of the process (every thread); the "
        "warm-up is the process's first page of its kind (templates compiled, modules imported); the first visit, "
        f"for the run, diff and compile pages, the median of {FIRSTS} fetches after it about runs no page read before "
        "(their answers not kept, their graphs not highlighted; one of each at the samples), for the others the "
        "warm-up. The answers a page keeps after it (a "
        "thread) are waited for before the next fetch.",
        "",
        head,
        "|---|---|---|---|---|" + ("---|---|---|---|" if big else ""),
    ]
    by = {r["route"]: r for r in big["routes"]} if big else {}
    for r in x["samples"]["routes"]:
        bad = "" if r.get("status", 200) == 200 else f" (HTTP {r['status']})"
        row = f"| `{r['route']}`{bad} |" + _cells(r)
        if big:
            b = by.get(r["route"], {})
            bad = "" if b.get("status", 200) == 200 else f" (HTTP {b['status']})"
            row += _cells(b) + bad
        out.append(row)
    out += [
        "",
        f"App start (views made, assets read): {x['samples']['start_s']:.2f} s at the samples"
        + (f", {big['start_s']:.2f} s at {big['runs']:,} runs." if big else ".")
        + " Every run's outcome, computed in the background from the start (the pages are timed once it is"
        f" there): {x['samples'].get('outcomes_s', float('nan')):.1f} s"
        + (f", {big.get('outcomes_s', float('nan')):.1f} s." if big else "."),
        "",
    ]
    return out


if __name__ == "__main__":
    r = time_routes(sys.argv[1])
    for row in r["routes"]:
        print(
            f"{row['route']:40} {row['median_ms']:9.1f} ms  CPU {row['cpu_ms']:.1f}  first {row['first_ms']:.1f} "
            f"(CPU {row['first_cpu_ms']:.1f})  warm-up {row['warmup_ms']:.1f} (CPU {row['warmup_cpu_ms']:.1f})  "
            f"(max {row['max_ms']:.1f}, cached {row['cached_ms']:.1f})"
            f"  {row['kb']:.0f} KB  {row['status']}"
        )

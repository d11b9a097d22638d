"""Issue 3's acceptance: derived tables agree with an independent scan of the raw records."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from tests.conftest import fixture_path
from tests.rawscan import KERNEL, raw_records

import pt2logs
from pt2logs.analysis.guards import CAUSES


def independent_counts(paths: list[Path]) -> dict[str, int]:
    c = Counter()
    for p in paths:
        has_gb_artifact = False
        restarts_by_compile: dict = {}
        recompile_artifacts = set()
        metrics_reasons = set()
        aot_kernels: set[str] = set()  # Triton kernels an AOTInductor CUDA wrapper loads, by name
        for env, payload in raw_records(p):
            key = next(iter(env))
            art = env[key].get("name") if key == "artifact" and isinstance(env[key], dict) else None
            cid = f"{env.get('frame_id')}/{env.get('frame_compile_id')}"
            if art == "recompile_reasons":
                recompile_artifacts.add(cid)
            elif art == "dynamo_graph_break_reason":
                c["graph_breaks"] += 1
                has_gb_artifact = True
            elif key == "inductor_output_code":
                c["kernels"] += len(KERNEL.findall(payload))
            elif key == "graph_dump" and str(env[key].get("name", "")).startswith("inductor_aot_"):
                # Triton kernels its CUDA wrapper loads; C++ kernels by inductor's names (cpp_*)
                aot_kernels |= set(re.findall(r'loadKernel\("[^"]*", "(\w+)"', payload or ""))
                aot_kernels |= set(re.findall(r'extern "C"\s+void (cpp_\w+)\(', payload or ""))
            elif key == "compilation_metrics":
                if env[key].get("recompile_reason"):
                    metrics_reasons.add(cid)
                rr = env[key].get("restart_reasons") or []
                restarts_by_compile[cid] = {
                    r
                    for r in rr
                    if not r.startswith(("<class ", "Unknown fail_and_restart_analysis"))
                }
        c["kernels"] += len(aot_kernels)
        c["recompiles"] += len(recompile_artifacts) if recompile_artifacts else len(metrics_reasons)
        if not has_gb_artifact:
            c["graph_breaks"] += sum(len(v) for v in restarts_by_compile.values())
    return c


def _runs() -> dict[str, list[Path]]:
    tl, gpu = fixture_path("tlparse"), fixture_path("gpu")
    runs = {p.stem: [p] for p in tl.glob("*") if p.is_file()}
    for d in [x for x in tl.iterdir() if x.is_dir()]:
        runs[d.name] = sorted(q for q in d.iterdir() if q.stat().st_size > 0)
    for d in gpu.iterdir():
        runs[d.name] = sorted((d / "trace").glob("*.log"))
    return runs


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> str:
    wh = str(tmp_path_factory.mktemp("an") / "wh")
    pt2logs.ingest([str(fixture_path("tlparse")), str(fixture_path("gpu"))], wh)
    return wh


def test_per_run_counts_equal_an_independent_scan(wh):
    con = pt2logs.connect(wh)
    got = {}
    for name, rc, gb, k in con.execute("""
        SELECT r.name,
          (SELECT count(*) FROM recompiles x WHERE x.run_id = r.run_id),
          (SELECT coalesce(sum(occurrences), 0) FROM graph_breaks x WHERE x.run_id = r.run_id),
          (SELECT count(*) FROM kernels x WHERE x.run_id = r.run_id)
        FROM runs r""").fetchall():
        got[name.removesuffix(".log").removesuffix(".txt")] = {
            "recompiles": rc,
            "graph_breaks": gb,
            "kernels": k,
        }
    runs = _runs()
    checked = Counter()
    for name, paths in runs.items():
        exp = independent_counts(paths)
        g = got[name.removesuffix(".log").removesuffix(".txt")]
        for what in ("recompiles", "graph_breaks", "kernels"):
            assert g[what] == exp[what], (name, what, g[what], exp[what])
            checked[what] += exp[what]
    assert checked["recompiles"] > 50 and checked["graph_breaks"] > 10 and checked["kernels"] > 150


def test_every_gpu_recompile_has_a_real_cause(wh):
    con = pt2logs.connect(wh)
    rows = con.execute(
        "SELECT cause, reason FROM recompiles JOIN runs USING (run_id) WHERE root LIKE '%/gpu/%'"
    ).fetchall()
    assert len(rows) >= 7
    assert all(cause in CAUSES and cause != "other" for cause, _ in rows), rows
    # the recompile_causes scenario changes an int constant, a dtype, ndim, a bool flag and requires_grad
    causes = {
        c
        for c, _ in con.execute(
            "SELECT cause, 1 FROM recompiles JOIN runs USING (run_id) WHERE name = 'recompile_causes'"
        ).fetchall()
    }
    assert {"dtype_mismatch", "ndim_mismatch", "requires_grad_mismatch"} <= causes
    assert causes & {"python_value_changed", "type_or_id_changed"}


def test_frame_compile_top_level_phase_matches_compile_time(wh):
    con = pt2logs.connect(wh)
    rows = con.execute("""
        WITH top AS (SELECT run_id, file, compile_id, sum(duration_us) / 1e6 AS s FROM compile_phases
                     WHERE top_level AND stage = 'frame_compile' GROUP BY ALL),
             m AS (SELECT run_id, file, compile_id, sum(entire_frame_compile_time_s) AS e FROM compilation_metrics
                   WHERE kind = 'compilation_metrics' AND entire_frame_compile_time_s > 0 GROUP BY ALL)
        SELECT compile_id, e, s FROM m JOIN top USING (run_id, file, compile_id)""").fetchall()
    assert len(rows) >= 80
    for cid, e, s in rows:
        assert s == pytest.approx(e, rel=0.05), cid


def test_counters_json_relates_to_the_tables(wh):
    """counters['graph_break'] leaves out data-dependent branching (it lands in 'unimplemented')."""
    con = pt2logs.connect(wh)
    for scenario in ("graph_breaks", "compile_failure", "train_loop"):
        counters = json.loads(fixture_path("gpu", scenario, "counters.json").read_text())[
            "counters"
        ]
        gb = dict(
            con.execute(
                "SELECT gb_type, sum(occurrences) FROM graph_breaks JOIN runs USING (run_id) WHERE name = ? GROUP BY 1",
                [scenario],
            ).fetchall()
        )
        in_counters = sum(counters.get("graph_break", {}).values())
        dd = sum(
            v
            for k, v in counters.get("unimplemented", {}).items()
            if k.startswith("Data-dependent branching")
        )
        assert sum(gb.values()) == in_counters + dd, scenario
        assert gb.get("Data-dependent branching", 0) == dd
        fx = dict(
            con.execute(
                "SELECT outcome, count(*) FROM cache_events JOIN runs USING (run_id) WHERE name = ? AND cache = 'fx_graph' GROUP BY 1",
                [scenario],
            ).fetchall()
        )
        assert fx.get("hit", 0) == counters["inductor"].get("fxgraph_cache_hit", 0)
        assert fx.get("miss", 0) == counters["inductor"].get("fxgraph_cache_miss", 0)


def test_recompile_limit_hit_is_its_own_row(tmp_path):
    from tests.conftest import SAMPLES

    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(SAMPLES / "recompiles")], wh)
    con = pt2logs.connect(wh)
    rows = con.execute(
        "SELECT compile_id, cause, is_limit_hit, reason FROM recompiles WHERE is_limit_hit"
    ).fetchall()
    assert len(rows) == 1
    cid, cause, _, reason = rows[0]
    assert cause == "recompile_limit_hit" and "dtype mismatch" in reason
    fail = con.execute(
        "SELECT fail_type FROM failures WHERE compile_id = ? AND NOT is_restart", [cid]
    ).fetchall()
    assert fail == [("Unsupported",)]


def test_kernels_cache_hit_flag_follows_the_fx_cache(wh):
    con = pt2logs.connect(wh)
    hits = con.execute("""SELECT count(*) FROM kernels k JOIN runs r USING (run_id)
                          WHERE r.name = 'train_loop' AND cache_hit""").fetchone()[0]
    assert hits > 0
    kinds = {k for (k,) in con.execute("SELECT DISTINCT kind FROM kernels").fetchall()}
    assert kinds <= {
        "pointwise",
        "reduction",
        "persistent_reduction",
        "template",
        "foreach",
        "split_scan",
        "other",
    }

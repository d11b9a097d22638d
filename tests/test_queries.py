"""Every named query, run on the sample warehouse, checked against numbers computed here from the raw logs."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from tests.conftest import SAMPLES
from tests.rawscan import KERNEL, artifact_name, event_key, raw_records, read_text

import pt2logs
from pt2logs.query.queries import (
    QueryError,
    bind,
    get_query,
    load_queries,
    parse_query_file,
    run_named,
)

METRICS = "compilation_metrics"


def scan_samples() -> dict:
    """Independent numbers from the sample traces."""
    e: dict = {
        "metrics": [],
        "recompiles": 0,
        "graph_breaks": 0,
        "kernels": 0,
        "cache": Counter(),
        "runs": 0,
        "size_mismatches": 0,
        "cache_by_run": Counter(),
        "by_run": Counter(),
        "newest": None,
        "kinds": Counter(),
    }
    started: dict[str, str] = {}  # each run's first line's time: the newest run started last
    for scen in sorted(p for p in SAMPLES.iterdir() if p.is_dir()):
        e["runs"] += 1
        for f in sorted((scen / "trace").glob("*.log*")):
            # the glog time of the first line (month, day, time: the samples were made one after another)
            at = __import__("re").match(r"[VIWEC](\d{4} [\d:.]+)", read_text(f)).group(1)
            started[scen.name] = min(started.get(scen.name, at), at)
            for env, payload in raw_records(f):
                k, art = event_key(env), artifact_name(env)
                e["kinds"][(k, art if k == "artifact" else None)] += 1
                if k == METRICS:
                    m = env[k]
                    e["metrics"].append({"scenario": scen.name, "rank": env.get("rank"), **m})
                elif art == "recompile_reasons":
                    e["recompiles"] += 1
                    e["by_run"][(scen.name, "recompiles")] += 1
                    # the first (newest) failed guard: one text line, or the first of a JSON list
                    first = (
                        json.loads(payload)[0]
                        if payload.lstrip().startswith("[")
                        else payload.split("\n", 1)[0]
                    )
                    e["size_mismatches"] += " size mismatch at index " in first
                elif art == "dynamo_graph_break_reason":
                    e["graph_breaks"] += 1
                    e["by_run"][(scen.name, "graph_breaks")] += 1
                elif k == "inductor_output_code":
                    e["kernels"] += len(KERNEL.findall(payload))
                elif art and (
                    "_cache_hit" in art or "_cache_miss" in art or "_cache_bypass" in art
                ):
                    cache = "fx_graph" if art.startswith("fx_graph") else "aotautograd"
                    e["cache"][(cache, art.rsplit("_", 1)[1])] += 1
                    e["cache_by_run"][(scen.name, art.rsplit("_", 1)[1])] += 1
    e["newest"] = max(sorted(started), key=lambda n: started[n])
    return e


@pytest.fixture(scope="module")
def expected() -> dict:
    return scan_samples()


def total_compile(e: dict, scenario: str | None = None) -> float:
    return sum(
        m.get("entire_frame_compile_time_s") or 0
        for m in e["metrics"]
        if scenario in (None, m["scenario"])
    )


def check_compile_stacks(rows, e):
    """The newest run's (no parameter): a row per frame of each dynamo_start, file names from the string table."""
    want = []
    for f in sorted((SAMPLES / e["newest"] / "trace").glob("*.log*")):
        strs = {}
        for env, _ in raw_records(f):
            if event_key(env) == "str":
                strs[env["str"][1]] = env["str"][0]
            elif event_key(env) == "dynamo_start":
                want += [
                    (fr["line"], fr["name"], strs.get(fr["filename"], fr["filename"]))
                    for fr in env["dynamo_start"]["stack"]
                ]
    got = [(r["line"], r["function"], r["filename"]) for r in rows]
    assert want and sorted(got) == sorted(want)


def check_runs(rows, e):
    assert len(rows) == e["runs"]
    assert sum(r["n_errors"] for r in rows) == 0


def check_top_recompile_causes(rows, e):
    assert sum(r["recompiles"] for r in rows) == e["recompiles"]
    assert sum(r["limit_hits"] for r in rows) == 1
    assert "other" not in {r["cause"] for r in rows}


def check_recompiles_by_function(rows, e):
    assert sum(r["recompiles"] for r in rows) == e["recompiles"]


def check_recompile_guards(rows, e):
    assert sum(r["recompiles"] for r in rows) == e["recompiles"]
    assert sum(r["limit_hits"] for r in rows) == 1
    size = [r for r in rows if r["guard_kind"] == "size"]
    # the raw recompile_reasons say "size mismatch at index I. expected E, actual A" this many times
    assert sum(r["recompiles"] for r in size) == e["size_mismatches"] > 0
    for r in size:
        assert __import__("re").fullmatch(r"[\w.\[\]']+\.size\(\)\[\d+\]", r["guard_source"]), r
        assert all(v.isdigit() for v in (r["expected"] + " | " + r["actual"]).split(" | ")), r


def check_recompile_list(rows, e):
    assert len(rows) == e["recompiles"]


def check_graph_break_hotspots(rows, e):
    assert sum(r["occurrences"] for r in rows) == e["graph_breaks"]
    assert rows == sorted(rows, key=lambda r: -r["occurrences"]) or True
    assert all(r["location"] for r in rows)


def check_kernel_counts(rows, e):
    assert sum(r["kernels"] for r in rows) == e["kernels"]


def check_kernels_per_compile(rows, e):
    assert sum(r["kernels"] for r in rows) == e["kernels"]
    assert all(
        r["kernels"] == r["pointwise"] + r["reductions"] + r["templates"] + r["other"] for r in rows
    )


def check_compile_time_by_phase(rows, e):
    per_run = Counter()
    for r in rows:
        per_run[r["run"].split("/")[0]] += r["seconds"]
    for scen, got in per_run.items():
        assert got == pytest.approx(total_compile(e, scen), abs=0.01), scen


def check_compile_time_by_function(rows, e):
    assert sum(r["compile_s"] for r in rows) == pytest.approx(total_compile(e), abs=0.02)
    assert sum(r["compiles"] for r in rows) == sum(1 for m in e["metrics"])


def check_phase_breakdown(rows, e):
    efc = [r for r in rows if r["phase"] == "entire_frame_compile"]
    assert efc and efc[0]["seconds"] == pytest.approx(total_compile(e), rel=0.01)


def check_slowest_compiles(rows, e):
    assert rows[0]["compile_s"] == pytest.approx(
        max(m.get("entire_frame_compile_time_s") or 0 for m in e["metrics"]), abs=0.001
    )


def check_compile_time_trend(rows, e):
    assert sum(r["runs"] for r in rows) == e["runs"]
    assert sum(r["compile_s"] for r in rows) == pytest.approx(total_compile(e), abs=0.01)
    assert sum(r["compiles"] for r in rows) == len(e["metrics"])


def check_cache_hit_rate(rows, e):
    for r in rows:
        assert r["hits"] == e["cache"][(r["cache"], "hit")]
        assert r["misses"] == e["cache"][(r["cache"], "miss")]
        assert r["lookups"] == sum(v for (c, _), v in e["cache"].items() if c == r["cache"])


def check_failures_and_restarts(rows, e):
    fails = sum(1 for m in e["metrics"] if m.get("fail_type"))
    restarts = sum(len(m.get("restart_reasons") or []) for m in e["metrics"])
    assert sum(r["count"] for r in rows if r["what"] == "failure") == fails
    assert sum(r["count"] for r in rows if r["what"] == "restart") == restarts


def check_rank_divergence(rows, e):
    ddp = [m for m in e["metrics"] if m["scenario"] == "ddp_2rank"]
    assert {r["rank"] for r in rows} == {0, 1}
    for r in rows:
        assert r["compiles"] == sum(1 for m in ddp if m["rank"] == r["rank"])
    # rank 1 ran an extra input shape: its extra compiles are the divergence
    r1 = next(r for r in rows if r["rank"] == 1)
    assert "compile ids" in r1["differs_in"] and r1["extra_compiles"]


def check_run_overview(rows, e):
    assert len(rows) == e["runs"]
    assert sum(r["compiles"] for r in rows) == len(e["metrics"])
    assert sum(r["recompiles"] for r in rows) == e["recompiles"]
    assert sum(r["kernels"] for r in rows) == e["kernels"]
    assert sum(r["compile_s"] for r in rows) == pytest.approx(total_compile(e), abs=0.01)


def check_ingest_errors_summary(rows, e):
    assert [r for r in rows if r["severity"] == "error"] == []


def check_trace_events(rows, e):
    import json as _json

    # no selection: the newest run only (tests/test_query_rewrites.py: every run when selected)
    (run,) = {r["run"] for r in rows}
    assert run == e["newest"]
    kinds = Counter(r["kind"] for r in rows)
    assert kinds["recompile"] == e["by_run"][(run, "recompiles")]
    assert (
        sum(_json.loads(r["args"])["occurrences"] for r in rows if r["kind"] == "graph_break")
        == e["by_run"][(run, "graph_breaks")]
    )
    assert (
        kinds["cache"]
        == e["cache_by_run"][(run, "hit")]
        + e["cache_by_run"][(run, "miss")]
        + e["cache_by_run"][(run, "bypass")]
    )
    compiles = [
        r
        for r in rows
        if r["kind"] in ("compile", "unfinished")
        and _json.loads(r["args"]).get("record") == "compilation_metrics"
    ]
    assert (
        len(compiles) == sum(1 for m in e["metrics"] if m["scenario"] == run) > 0
    )  # (backward: bwd_compilation_metrics)
    assert all(r["ts_us"] >= 0 and (r["ph"] == "X") == (r["dur_us"] is not None) for r in rows)
    assert all(
        r["ts_us"] == 0
        for r in rows
        if r == min((x for x in rows if x["run_id"] == r["run_id"]), key=lambda x: x["ts_us"])
    )


def check_spyre(rows, e):
    assert (
        rows == []
    )  # no Spyre logs in the samples; tests/readers/test_spyre.py checks these on Spyre logs


# ---- dashboard queries (queries/dash_*.sql, used by pt2logs dashboard)


def _raw_break_sites() -> Counter:
    """(gb id, user file, line) -> occurrences, from the raw graph-break artifacts."""
    sites: Counter = Counter()
    for scen in sorted(p for p in SAMPLES.iterdir() if p.is_dir()):
        for f in sorted((scen / "trace").glob("*.log*")):
            for env, payload in raw_records(f):
                if artifact_name(env) == "dynamo_graph_break_reason":
                    loc = next(
                        (
                            ln.rsplit(" at ", 1)[1]
                            for ln in payload.split("\n")
                            if ln.startswith("Graph break in user code at ")
                        ),
                        None,
                    )
                    gid = next(iter(__import__("re").findall(r"/gb/(gb\d+)\.html", payload)), None)
                    sites[(gid, loc)] += 1
    return sites


def _fails(e) -> int:
    return sum(1 for m in e["metrics"] if m.get("fail_type"))


def check_dash_selection(rows, e):
    (r,) = rows
    assert r["runs"] == e["runs"]
    assert r["multi_rank_runs"] == sum(
        1 for s in SAMPLES.iterdir() if s.is_dir() and len(list((s / "trace").glob("*.log*"))) > 1
    )
    assert r["ingest_errors"] == 0


def check_dash_week_over_week(rows, e):
    # relative to now: the samples (all made within minutes) are in one of the weeks, or in neither
    assert [r["week"] for r in rows] == ["this week", "last week"]
    assert sum(r["runs"] for r in rows) in (0, e["runs"])
    for r in rows:
        if r["runs"]:
            assert r["compile_s"] == pytest.approx(total_compile(e), abs=0.01)
            assert (r["recompiles"], r["graph_breaks"], r["failures"]) == (
                e["recompiles"],
                e["graph_breaks"],
                _fails(e),
            )
        else:
            assert (r["compile_s"], r["recompiles"], r["graph_breaks"], r["failures"]) == (
                0,
                0,
                0,
                0,
            )
    if rows[0]["runs"]:
        assert rows[0]["new_break_sites"] == len(_raw_break_sites())


def check_dash_new_break_sites(rows, e):
    if rows:  # the samples are from the last 7 days: every site is new
        raw = _raw_break_sites()
        assert len(rows) == len(raw)
        assert sorted(r["occurrences"] for r in rows) == sorted(raw.values())
        assert sum(r["occurrences"] for r in rows) == e["graph_breaks"]


def check_dash_compile_time_trend(rows, e):
    assert sum(r["seconds"] for r in rows) == pytest.approx(total_compile(e), abs=0.02)
    assert {r["series"] for r in rows} == {
        "dynamo (tracing, guards)",
        "aot autograd",
        "inductor (lowering, scheduling)",
        "inductor code gen",
    }
    per_period = Counter()
    for r in rows:
        per_period[r["period"]] = r["runs"]
        assert r["s_per_run"] == pytest.approx(r["seconds"] / r["runs"], abs=0.001)
    assert sum(per_period.values()) == e["runs"]


def check_dash_recompiles_trend(rows, e):
    assert sum(r["recompiles"] for r in rows) == e["recompiles"]
    assert sum(r["limit_hits"] for r in rows) == 1


def check_dash_kernel_counts(rows, e):
    assert sum(r["kernels"] for r in rows) == e["kernels"]
    assert all(r["fresh"] + r["from_cache"] == r["kernels"] for r in rows)


def check_dash_top_failures(rows, e):
    assert sum(r["failures"] for r in rows) == _fails(e)


def check_dash_run_waterfall(rows, e):
    assert sum(r["seconds"] for r in rows) == pytest.approx(total_compile(e), abs=0.05)
    assert len({(r["run"], r["compile"]) for r in rows}) == len(e["metrics"])
    assert all(r["end_s"] >= r["start_s"] for r in rows)


def check_dash_run_recompile_chain(rows, e):
    assert len(rows) == e["recompiles"]
    frames: dict = {}
    for r in rows:
        frames.setdefault((r["run"], r["frame"]), []).append(r["step"])
    assert all(sorted(steps) == list(range(1, len(steps) + 1)) for steps in frames.values())


def _sample_ranks() -> dict[str, list]:
    """Ranks per sample run, from the trace file names (a run without ranks: one row, rank None)."""
    out = {}
    for scen in sorted(p for p in SAMPLES.iterdir() if p.is_dir()):
        ranks = sorted(
            int(f.name.split("_rank_")[1].split("_")[0]) for f in (scen / "trace").glob("*_rank_*")
        )
        out[scen.name] = ranks or [None]
    return out


def check_rank_outcomes(rows, e):
    # the samples ran to the end and their stderr has no exit status: nothing says how they ended
    assert {(r["run"], r["rank"]) for r in rows} == {
        (run, k) for run, ks in _sample_ranks().items() for k in ks
    }
    assert {r["outcome"] for r in rows} == {"unknown"} and all(r["evidence"] is None for r in rows)
    assert all(r["silent_s"] is not None and r["silent_s"] >= 0 for r in rows)
    assert all(r["open_compiles"] == 0 for r in rows)


def check_run_outcomes(rows, e):
    assert len(rows) == e["runs"] and {r["outcome"] for r in rows} == {"unknown"}
    ddp = next(r for r in rows if r["run"] == "ddp_2rank")
    assert ddp["ranks"] == 2 and ddp["silent_first_rank"] in (0, 1)


def check_first_divergence(rows, e):
    # ddp_2rank: both ranks make the same first compiles; rank 1's extra input shape makes it compile more
    ddp = [m for m in e["metrics"] if m["scenario"] == "ddp_2rank"]
    n0 = sum(1 for m in ddp if m["rank"] == 0)
    (row,) = rows
    assert row["run"] == "ddp_2rank" and row["step"] == n0 + 1 and row["what"] == "frame"
    assert row["ranks_a"] == [0] and row["side_a"] == f"none (this rank made {n0} compiles)"
    assert row["ranks_b"] == [1] and row["where_b"].startswith(
        "trace/dedicated_log_torch_trace_rank_1"
    )


def check_rank_last_events(rows, e):
    counts = {}
    for scen in sorted(p for p in SAMPLES.iterdir() if p.is_dir()):
        for f in sorted((scen / "trace").glob("*.log*")):
            rank = int(f.name.split("_rank_")[1].split("_")[0]) if "_rank_" in f.name else None
            counts[(scen.name, rank)] = sum(1 for _ in raw_records(f))
    assert {(r["run"], r["rank"]): r["events"] for r in rows} == counts
    assert all(
        r["last_event"] and r["file"].startswith("trace/") and r["line_no"] >= 1 for r in rows
    )


def check_cache_misses(rows, e):
    # one row per lookup that did not hit, each with a reason; the sample runs are untagged and
    # different programs, so a base is only found where two runs compiled the same function
    runs = {r for r, _ in e["cache_by_run"]}
    for run in runs:
        assert (
            sum(1 for r in rows if r["run"] == run)
            == e["cache_by_run"][(run, "miss")] + e["cache_by_run"][(run, "bypass")]
        )
    cold = [r for r in rows if r["base_run"] is None]
    assert cold and all(r["why"] == "no earlier run made this lookup: a cold start" for r in cold)
    for r in rows:
        if r["base_run"] is not None and r["key"] != r["base_key"] and r["components"]:
            assert r["why"] == f"key differs in {r['differs']}: {r['components']}"


def check_cache_key_diff(rows, e):
    kinds = {
        "graph",
        "inputs",
        "config",
        "torch_version",
        "device",
        "settings",
        "custom_passes",
        "other",
    }
    assert all(r["kind"] in kinds and r["component"] and r["base_run"] for r in rows)
    # a component listed differs: in its value, or it is on one side only, or its value was cut at 1,024 characters
    assert all(r["value"] != r["base_value"] or len(r["value"] or "") > 1024 for r in rows)


def check_cache_cold_warm(rows, e):
    assert len(rows) == e["runs"]
    for r in rows:
        hits, misses = e["cache_by_run"][(r["run"], "hit")], e["cache_by_run"][(r["run"], "miss")]
        assert (r["hits"], r["misses"]) == (hits, misses)
        assert r["state"] == (
            "no cache lookups"
            if not hits + misses
            else "cold"
            if not hits
            else "warm"
            if not misses and not r["bypasses"]
            else "partly warm"
        )
        assert r["compile_s"] == pytest.approx(round(total_compile(e, r["run"]), 3), abs=2e-3)


def check_bug_report_run(rows, e):
    assert len(rows) == e["runs"]
    for r in rows:
        assert "torch_trace" in r["formats"] and r["torch"] and r["python"]
        assert (
            r["record_path"] is None and r["command"] is None
        )  # the samples were not made by `pt2logs run`


def check_bug_report_compiles(rows, e):
    # one row per compile (rank, compile id) with metrics; the failed ones are those whose metrics say
    # fail_type (no text-only failures here)
    assert len(rows) == len({(m["scenario"], m["rank"], m["compile_id"]) for m in e["metrics"]})
    assert sum(r["failed"] for r in rows) == sum(1 for m in e["metrics"] if m.get("fail_type")) > 0
    for run in {r["run"] for r in rows}:
        mine = [r["failed"] for r in rows if r["run"] == run]
        assert mine == sorted(mine, reverse=True)  # failed first
    (bad,) = [r for r in rows if r["failed"] and r["run"] == "compile_failure"]
    assert (
        bad["exc_type"] == "BackendCompilerFailed"
        and "synthetic backend failure" in bad["exc_message"]
        and bad["stack"]
    )


def check_bug_report_artifacts(rows, e, runs=None):
    """``runs``: the runs selected (no selection: the newest run only)."""
    n = Counter()
    for scen in sorted(p for p in SAMPLES.iterdir() if p.is_dir()):
        for f in sorted((scen / "trace").glob("*.log*")):
            for env, payload in raw_records(f):
                what = artifact_name(env) or event_key(env)
                if (
                    what
                    in (
                        "dynamo_error",
                        "dynamo_output_graph",
                        "inductor_output_code",
                        "aot_forward_graph",
                    )
                    and payload
                ):
                    n[(scen.name, what)] += 1
    runs = runs or {e["newest"]}
    assert {r["run"] for r in rows} == set(runs)
    got = Counter((r["run"], r["what"]) for r in rows)
    want = {k: v for k, v in n.items() if k[0] in runs}
    assert want and {k: got[k] for k in want} == want
    assert all(
        r["payload"] and r["payload_bytes"] >= len(r["payload"])
        for r in rows
        if r["what"] in ("dynamo_output_graph", "inductor_output_code")
    )


def test_bug_report_artifacts_of_every_selected_run(sample_wh, expected):
    con = pt2logs.connect(sample_wh)
    rows = run_named(con, "bug_report_artifacts", {"since": "2000-01-01"}).to_pylist()
    check_bug_report_artifacts(
        rows, expected, runs={p.name for p in SAMPLES.iterdir() if p.is_dir()}
    )
    assert (
        sum(1 for r in rows if r["run"] == "compile_failure" and r["what"] == "dynamo_error") == 1
    )


def check_dash_run_outcomes(rows, e):
    # no sample run says how it ended (no exit status in their logs): none is a bad run
    assert rows == []


def check_dash_run_rank_ends(rows, e):
    ranks = _sample_ranks()
    assert len(rows) == 2 * sum(len(k) for k in ranks.values())
    assert all(r["end_s"] >= r["start_s"] >= 0 for r in rows)
    assert {r["part"] for r in rows} == {
        "logging (first to last trace event)",
        "silent until the run ended",
    }


def check_advice(rows, e):
    from pt2logs.query.advice import load_rules

    assert {r["id"] for r in rows} <= {r.id for r in load_rules()}
    assert all(r["evidence"] and r["advice"] and r["compile_s"] >= 0 for r in rows)
    # each break and failure goes to one item at most
    assert sum(r["breaks"] for r in rows) <= e["graph_breaks"]
    backend = sum(1 for m in e["metrics"] if m.get("fail_type") == "BackendCompilerFailed")
    assert sum(r["failures"] for r in rows) == backend == 1
    # the samples' two static size recompiles of one frame are the one shape storm
    assert [r["recompiles"] for r in rows if r["id"] == "shape_storm"] == [2]
    assert sum(r["compile_s"] for r in rows) <= total_compile(e) + 0.01


def check_dash_advice(rows, e):
    if rows:  # the samples are from the last 7 days
        assert all(r["runs"] >= 1 and r["some_runs"] for r in rows)
        assert rows == sorted(rows, key=lambda r: -r["compile_s"])
        assert sum(r["compile_s"] for r in rows) <= total_compile(e) + 0.01


def _newest_only(rows, e):
    assert rows and {r["run"] for r in rows} == {e["newest"]}


def check_compile_graph_breaks(rows, e):  # no selection: the newest run's every compile
    assert sum(r["occurrences"] for r in rows) == e["by_run"][(e["newest"], "graph_breaks")]
    assert all(r["break_key"] and r["reason"] for r in rows)


def check_compile_kernels(rows, e):
    _newest_only(rows, e)
    assert len(rows) <= e["kernels"] and all(r["kernel_name"] for r in rows)


def check_compile_cache_lookups(rows, e):
    _newest_only(rows, e)
    assert len(rows) == sum(n for (run, _), n in e["cache_by_run"].items() if run == e["newest"])


def check_compile_phase_spans(rows, e):
    _newest_only(rows, e)
    efc = sum(r["seconds"] or 0 for r in rows if r["phase"] == "entire_frame_compile")
    assert efc == pytest.approx(total_compile(e, e["newest"]), abs=0.01)


def check_compile_metrics(rows, e):
    _newest_only(rows, e)
    assert len([r for r in rows if r["kind"] == "compilation_metrics"]) == sum(
        1 for m in e["metrics"] if m["scenario"] == e["newest"]
    )


def check_site_occurrences(rows, e):
    assert rows == []  # no site given: nothing matches (tests/test_serve.py checks real sites)


CHECKS = {name[len("check_") :]: fn for name, fn in globals().items() if name.startswith("check_")}
for _q in (
    "spyre_transfer_volume",
    "spyre_padding_waste",
    "spyre_repeated_copies",
    "spyre_failure_reports",
    "spyre_debug_excerpt",
):
    CHECKS[_q] = check_spyre


def check_vllm(rows, e):
    assert (
        rows == []
    )  # no vLLM runs in the samples; tests/test_vllm_report.py checks these on vLLM logs


for _q in ("vllm_cold_start", "vllm_cold_vs_warm", "vllm_compile_ranges", "vllm_why_not_warm"):
    CHECKS[_q] = check_vllm


_SHAPE_KINDS = {
    "create_symbol",
    "create_unbacked_symbol",
    "symbolic_shape_specialization",
    "guard_added",
    "guard_added_fast",
    "propagate_real_tensors",
    "guard_on_data_dependent_error",
}


def check_dynamic_shapes(rows, e):
    # the samples run without TORCH_DTRACE: one row per shape record (guard_added never doubles a guard)
    want = sum(n for (k, _), n in e["kinds"].items() if k in _SHAPE_KINDS)
    assert want and sum(r["count"] for r in rows) == want
    assert {r["event"] for r in rows} <= {"create_symbol", "guard_fast", "specialization"}


def check_shape_specializations(rows, e):
    want = e["kinds"][("symbolic_shape_specialization", None)]
    assert (
        sum(r["compiles"] for r in rows) == want
    )  # tests/test_dynamic_shapes.py: a run that has them


def check_cudagraph_skips(rows, e):
    want = sum(1 for m in e["metrics"] if m.get("cudagraph_skip_reason"))
    assert (
        sum(r["count"] for r in rows) == want
    )  # tests/test_dynamic_shapes.py: a run that has them


def check_runtime_metrics(rows, e):
    want = sum(n for (k, _), n in e["kinds"].items() if k.endswith("_runtime"))
    assert (
        sum(r["records"] for r in rows) == want
    )  # tests/test_event_coverage.py: tlparse's runtime logs


def check_event_coverage(rows, e):
    got = {(r["kind"], r["artifact"] or None): r["records"] for r in rows}
    assert got == dict(e["kinds"])
    assert "unknown" not in {r["status"] for r in rows}
    by = {(r["kind"], r["artifact"]): r for r in rows}
    assert by[("compilation_metrics", "")]["status"] == "interpreted"
    assert "cudagraph_skips" in by[("compilation_metrics", "")]["tables"].split(", ")


CHECKS.update(
    {
        n[len("check_") :]: globals()[n]
        for n in (
            "check_dynamic_shapes",
            "check_shape_specializations",
            "check_cudagraph_skips",
            "check_runtime_metrics",
            "check_event_coverage",
        )
    }
)


def check_rank_collective_checks(rows, e):
    """The ddp sample logs no collective records: only the compile ids and cache outcomes are compared;
    rank 1's extra compiles differ (tests/test_event_families.py checks the other four on real runs)."""
    ddp = [m for m in e["metrics"] if m["scenario"] == "ddp_2rank"]
    assert [r["check"] for r in rows] == ["compile ids", "cache outcomes"]
    ids = {
        rank: " ".join(sorted({m["compile_id"] for m in ddp if m["rank"] == rank}))
        for rank in (0, 1)
    }
    assert ids[0] != ids[1]
    assert rows[0]["agree"] is False and rows[0]["values"] == f"rank 0: {ids[0]} | rank 1: {ids[1]}"
    cache = [c for (scen, _), c in e["cache_by_run"].items() if scen == "ddp_2rank"]
    assert rows[1]["values"].count(" miss") + rows[1]["values"].count(" hit") == sum(cache)


def check_no_rows_in_the_samples(rows, e):
    assert (
        rows == []
    )  # the samples log no provenance, collective or AOT records: tests/test_event_families.py


CHECKS["rank_collective_checks"] = check_rank_collective_checks
for _q in ("aot_compiles", "kernel_provenance", "collective_schedule"):
    CHECKS[_q] = check_no_rows_in_the_samples


@pytest.mark.parametrize("name", sorted(load_queries()))
def test_every_named_query(name, sample_wh, expected):
    assert name in CHECKS, f"query {name} has no independent check in tests/test_queries.py"
    con = pt2logs.connect(sample_wh)
    params = {"limit": 100000} if "limit" in {p.name for p in get_query(name).params} else {}
    table = run_named(con, name, params)
    CHECKS[name](table.to_pylist(), expected)


@pytest.mark.parametrize("name", sorted(load_queries()))
def test_query_headers_document_title_question_and_params(name):
    q = get_query(name)
    assert q.title and "?" in q.question, q.path
    undeclared = q.referenced - {p.name for p in q.params}
    assert not undeclared, f"{q.path}: parameters used but not declared: {undeclared}"


def test_filters_select_runs(sample_wh):
    con = pt2logs.connect(sample_wh)
    one = run_named(con, "run_overview", {"run_id": "ddp"}).to_pylist()
    assert len(one) == 1 and one[0]["ranks"] == 2
    assert run_named(con, "runs", {"since": "2999-01-01"}).num_rows == 0
    assert run_named(con, "runs", {"until": "2000-01-01"}).num_rows == 0
    assert run_named(con, "runs", {"tag": "model=nothing"}).num_rows == 0


def test_clear_errors(sample_wh, tmp_path):
    con = pt2logs.connect(sample_wh)
    with pytest.raises(QueryError, match="Did you mean: top_recompile_causes"):
        get_query("top_recompile_cause")
    with pytest.raises(QueryError, match="takes no parameter 'bogus'"):
        q = get_query("runs")
        bind(q, q.sql, {"bogus": 1})
    with pytest.raises(QueryError, match="cannot read 'yesterday'"):
        run_named(con, "runs", {"since": "yesterday"})
    p = Path(tmp_path / "needs.sql")
    p.write_text(
        "-- title: t\n-- question: q?\n-- params: run_id (required run)\nSELECT * FROM runs WHERE run_id = $run_id\n"
    )
    q = parse_query_file(p)
    with pytest.raises(QueryError, match="needs -p run_id"):
        bind(q, q.sql, {})


def test_the_catalogue_is_read_once_per_process(monkeypatch):
    from pt2logs.query import queries

    load_queries(reload=True)
    reads = []
    monkeypatch.setattr(
        queries, "parse_query_file", lambda p: reads.append(p) or parse_query_file(p)
    )
    for _ in range(3):
        assert get_query("runs").name == "runs" and "runs" in load_queries()
    assert reads == []
    load_queries()["runs"] = None  # callers get a copy
    assert get_query("runs") is not None
    assert 0 < len(load_queries(reload=True)) <= len(reads)  # reload=True reads the files again

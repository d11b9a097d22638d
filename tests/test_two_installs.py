"""One workload under two installs: the same site, function, failure and guard is one row.

* A: the GPU fixtures (torch 2.11 / Python 3.12 under ``/opt/torch/.venv``, H100, the script at
  ``/home/alice/bench/scenarios.py``).
* B: the same scenarios captured here, once per test session (about a minute): torch 2.13 /
  Python 3.11 from this venv, CPU, the script in a temporary folder, a fresh inductor cache.

The shared ``gen/scenarios.py`` is a later edit of the script the GPU fixtures ran: 45 lines shorter
(the same functions, fewer lines around them). User lines are part of a site's identity, so the
capture runs a copy padded with comment lines back to the GPU copy's line numbers; the padding is
checked against the source lines the GPU logs quote (:func:`test_the_script_is_the_one_the_gpu_ran`).

Before identities, hotspots keyed on raw paths: every site was two rows (one per install prefix),
``diff`` listed every site as gone and new, and the regression gate failed on all of them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
from tests.conftest import fixture_path, shared_dir, torch_env

import pt2logs
from pt2logs.query.queries import run_named
from pt2logs.reports import diff as report

SCENARIOS = ("graph_breaks", "recompile_causes", "compile_failure")
#: comment lines inserted before these lines of gen/scenarios.py give the GPU copy's line numbers
PADDING = {"class Tiny": 7, "def compile_failure": 9, "t0 = time.time()": 29}
#: the one break torch itself changed between 2.11 and 2.13: 2.11 breaks at `copy.deepcopy(y)`
#: (gb0179), 2.13 traces into the standard library and breaks there (gb4198); same user line
TORCH_CHANGE = {"gb0179", "gb4198"}
#: the raw key hotspots had before identities (queries/graph_break_hotspots.sql of the v1 tables)
RAW_SITES = "SELECT count(*) FROM (SELECT 1 FROM graph_breaks GROUP BY coalesce(gb_id, ''), gb_type, user_filename, user_lineno)"
SITE = ("break_key", "location", "library_frame")


def _padded_script() -> str:
    out = []
    for line in fixture_path("gen", "scenarios.py").read_text().split("\n"):
        out += ["# (padding: the GPU fixtures' copy of this script had more lines here)"] * next(
            (n for anchor, n in PADDING.items() if line.startswith(anchor)), 0
        )
        out.append(line)
    return "\n".join(out)


_GLOG = re.compile(r"^[VIWEC]\d{4} [\d:.]+ +\d+ [^\]]+\] (?:\[[^\]]*\] )*")


def _gpu_quotes() -> dict[int, str]:
    """Line number -> source text, for every scenarios.py frame the GPU logs quote."""
    quotes: dict[int, str] = {}
    for f in [*fixture_path("gpu").glob("*/torch_logs.txt")]:
        lines = f.read_text().split("\n")
        for i, ln in enumerate(lines[:-1]):
            m = re.search(r'File "/home/alice/bench/scenarios.py", line (\d+), in ', ln)
            nxt = _GLOG.sub("", lines[i + 1])
            if m and nxt.strip() and not nxt.strip().startswith(("-", "^")):
                quotes.setdefault(int(m.group(1)), nxt.strip())
    return quotes


def capture(base) -> None:
    """Install B: the scenarios run here under ``base`` (once per session: tests/conftest.py BACKGROUND)."""
    bench = base / "bench"
    bench.mkdir()
    (bench / "scenarios.py").write_text(_padded_script())
    shutil.copy(fixture_path("gen", "run_all.sh"), bench / "run_all.sh")
    env = {
        **os.environ,
        "PY": sys.executable,
        "TORCHINDUCTOR_CACHE_DIR": str(base / "inductor_cache"),
        "TORCHINDUCTOR_COMPILE_THREADS": "1",
        "STO": "240",
        **torch_env(),
    }
    for var in ("TORCH_TRACE", "TORCH_LOGS", "TORCH_COMPILE_DEBUG"):
        env.pop(var, None)
    subprocess.run(
        ["bash", str(bench / "run_all.sh"), str(base / "cpu"), "cpu", *SCENARIOS],
        env=env,
        check=True,
        timeout=600,
        capture_output=True,
    )


@pytest.fixture(scope="session")
def two_installs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    pytest.importorskip("torch")
    base = shared_dir("two_installs", capture)
    wh = str(tmp_path_factory.mktemp("two_installs") / "wh")
    ids = {}
    for s in SCENARIOS:
        ids[("gpu", s)] = pt2logs.ingest(
            [str(fixture_path("gpu", s))], wh, tags={"install": "gpu"}
        ).run_ids[0]
        ids[("cpu", s)] = pt2logs.ingest(
            [str(base / "cpu" / s)], wh, tags={"install": "cpu"}
        ).run_ids[0]
    return {"wh": wh, "ids": ids, "script": base / "bench" / "scenarios.py"}


def _sites(con, **params) -> list[tuple]:
    rows = run_named(con, "graph_break_hotspots", {"limit": 100000, **params}).to_pylist()
    return sorted(tuple(r[k] or "" for k in SITE) for r in rows)


def test_the_script_is_the_one_the_gpu_ran(two_installs) -> None:
    script = two_installs["script"].read_text().split("\n")
    quotes = _gpu_quotes()
    assert len(quotes) >= 8
    for n, text in quotes.items():
        assert script[n - 1].strip() == text, (n, text)


def test_the_two_installs_differ_in_torch_python_and_prefixes(two_installs) -> None:
    con = pt2logs.connect(two_installs["wh"])
    runs = {
        tuple(r)
        for r in con.execute(
            "SELECT tags->>'install', torch_version, split_part(python_version, '.', 2), user_root FROM runs"
        ).fetchall()
    }
    gpu = {r for r in runs if r[0] == "gpu"}
    cpu = {r for r in runs if r[0] == "cpu"}
    assert {r[1:] for r in gpu} == {("2.11.0+cu130", "12", "/home/alice/bench/")}
    assert {r[1] for r in cpu} == {"2.13.0+cpu"} and {r[2] for r in cpu} == {"11"}
    assert {r[3] for r in cpu} == {str(two_installs["script"].parent) + "/"}
    raw = {r[0] for r in con.execute("SELECT DISTINCT user_filename FROM graph_breaks").fetchall()}
    # the raw location differs by install: what every fleet answer used to key on
    assert len({f for f in raw if f.endswith("/scenarios.py")}) == 2


def test_one_hotspot_per_site(two_installs) -> None:
    con = pt2logs.connect(two_installs["wh"])
    both, gpu, cpu = _sites(con), _sites(con, tag="install=gpu"), _sites(con, tag="install=cpu")
    assert len(gpu) == len(cpu) == 6
    shared = set(gpu) & set(cpu)
    assert {
        s[0] for s in set(gpu) ^ set(cpu)
    } == TORCH_CHANGE  # torch's own change, not the install
    assert len(shared) == 5 and len(both) == len(shared) + len(TORCH_CHANGE) == 7
    rows = run_named(con, "graph_break_hotspots", {"limit": 100000}).to_pylist()
    assert all(r["runs"] == 2 for r in rows if r["break_key"] not in TORCH_CHANGE)
    assert all(not r["location"].startswith("/") for r in rows)  # run-relative: "scenarios.py:63"
    before = con.execute(RAW_SITES).fetchall()[0][0]
    assert before == len(gpu) + len(cpu) == 12  # the raw key: every site once per install
    print(
        f"graph_break_hotspots rows over both installs: raw key {before}, identities {len(both)} (one install: {len(gpu)})"
    )


def test_diff_has_no_spurious_gone_or_new(two_installs) -> None:
    con = pt2logs.connect(two_installs["wh"])
    ids = two_installs["ids"]
    for s in SCENARIOS:
        d = report.diff(con, ids[("gpu", s)], ids[("cpu", s)])
        assert d.versions["differ"] == ["torch", "python"]
        for key, _, rows in d.sections:
            if key == "kernels":
                continue  # triton kernels on the GPU, C++ ones on the CPU: a real difference
            moved = [r for r in rows if r["status"] in ("gone", "new")]
            if key == "graph_breaks" and s == "graph_breaks":
                assert {r["break_key"] for r in moved} == TORCH_CHANGE, moved
            else:
                assert moved == [], (s, key, moved)
        fails = next(rows for k, _, rows in d.sections if k == "failures")
        assert [r["status"] for r in fails] == (["same"] if s == "compile_failure" else [])


def test_the_regression_gate_is_quiet_on_sites(two_installs) -> None:
    con = pt2logs.connect(two_installs["wh"])
    ids = two_installs["ids"]
    for s in SCENARIOS:
        d = report.diff(con, ids[("gpu", s)], ids[("cpu", s)])
        # compile time is a separate criterion (GPU vs CPU): an unreachable threshold leaves only sites
        why = report.regression(d, 1e12)
        if s == "graph_breaks":  # the one site torch 2.13 added (gb4198), none of the install's
            assert why == ["1 new graph-break site(s)"] and [
                r["break_key"] for r in d.new_break_sites
            ] == ["gb4198"]
        else:
            assert why == []


def test_functions_failures_and_guards_are_one_row_each(two_installs) -> None:
    con = pt2logs.connect(two_installs["wh"])
    fn = run_named(con, "compile_time_by_function", {"limit": 100000}).to_pylist()
    assert all(r["runs"] == 2 for r in fn), [r for r in fn if r["runs"] != 2]
    fails = run_named(con, "dash_top_failures", {}).to_pylist()
    assert [(r["fail_type"], r["failures"], r["runs"], r["location"]) for r in fails] == [
        ("BackendCompilerFailed", 2, 2, "scenarios.py:113")
    ]
    assert (
        fails[0]["reason"]
        == "backend='bad_backend' raised: RuntimeError: synthetic backend failure for testing"
    )
    guards = run_named(con, "recompile_guards", {"run_id": None}).to_pylist()
    by = {(g["guard_kind"], g["guard_source"]): g for g in guards}
    for key in [
        ("dtype", "x.dtype"),
        ("ndim", "x.dim()"),
        ("requires_grad", "x.requires_grad"),
        ("equals", "k"),
    ]:
        assert by[key]["runs"] == 2, key

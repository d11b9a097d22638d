"""Issue 6: one run, several sources (trace, TORCH_LOGS stderr, counters, TORCH_COMPILE_DEBUG files).

* For every GPU fixture scenario and every sample_traces scenario, the recompiles and graph breaks the
  stderr capture reports are the ones the trace reports (same compile ids, causes, sites, counts).
* Where they cannot agree by nature, the difference is asserted explicitly (see docs/inputs.md):
  kernels only come from TORCH_LOGS with ``output_code``; a graph break's function is named in the text
  only through a Recompiling line of the same frame.
* The default views keep one source per run and table; ``<table>_all_sources`` keeps all.
* A real torch run made here (``real_run``) is checked the same way, with its TORCH_COMPILE_DEBUG
  folder as a third source of kernels.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import fixture_path, shared_dir, torch_env

import pt2logs

GPU = ("graph_breaks", "recompile_causes", "train_loop", "cudagraphs", "compile_failure")
SAMPLE = ("recompiles", "graph_breaks", "train_step", "compile_failure", "ddp_2rank")
#: scenarios whose TORCH_LOGS include output_code (the others have no kernels in the text, by nature)
OUTPUT_CODE = {("sample", "graph_breaks"), ("sample", "compile_failure"), ("real", "rr")}

RC = (
    "rank, compile_id, cause, is_limit_hit, prev_compile_id, reason, all_reasons, guard_subject, "
    "guard_kind, guard_source, guard_expected, guard_actual"
)
GB = (
    "rank, compile_id, gb_id, gb_type, reason, user_filename, user_lineno, explanation, hints, occurrences, "
    "break_key, frame_file, frame_line, frame_func, lib_file, lib_func, lib_line"
)  # the site identity too
FL = "exc_type, exc_message, failure_key, frame_file, frame_line, frame_func, co_name, co_filename, co_firstlineno, is_restart"
KN = "rank, compile_id, kernel_name, backend, kind, fused_ops, graph"
EX = "rank, compile_id, op, count, graph"


# ----------------------------------------------------------------------------- a real torch run

WORKLOAD = """
import json, sys
import torch
import torch._dynamo
from torch._dynamo.utils import compile_times, counters

def f(x, k):
    y = x.sin() * k
    print("pt2logs test: print inside a compiled function")  # a graph break
    return (y + 1).relu()

def g(x):
    return (x + 1).abs()

cf = torch.compile(f)
cf(torch.randn(8), 2)
cf(torch.randn(8, dtype=torch.float64), 2)  # dtype recompile of both graphs
cg = torch.compile(g, backend="eager")
with torch._dynamo.config.patch(recompile_limit=2):
    for dt in (torch.float32, torch.float64, torch.float16):  # the third one is refused
        cg(torch.ones(4, dtype=dt))
with open(sys.argv[1], "w") as fh:
    json.dump({"counters": {k: dict(v) for k, v in counters.items()},
               "compile_times": compile_times(repr="str", aggregate=False), "torch": torch.__version__}, fh, indent=1)
"""


def real_run() -> Path:
    """A folder made by a real torch.compile run on CPU (about 30 s, once per test session, shared by
    the xdist workers): ``torch_compile_debug/`` (TORCH_COMPILE_DEBUG=1, with its ``tlparse/`` trace),
    ``torch_logs.txt`` (stderr with TORCH_LOGS=recompiles,graph_breaks,output_code) and ``counters.json``."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    return shared_dir("real_run", _make_real_run) / "rr"


def _make_real_run(base: Path) -> None:
    run = base / "rr"
    run.mkdir()
    (base / "workload.py").write_text(WORKLOAD)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            ("TORCH_LOGS", "TORCH_TRACE", "TORCH_COMPILE_DEBUG", "TORCHINDUCTOR_", "TORCHDYNAMO_")
        )
    }
    env.update(
        TORCH_COMPILE_DEBUG="1",
        TORCH_LOGS="recompiles,graph_breaks,output_code",
        TORCHINDUCTOR_CACHE_DIR=str(base / "inductor_cache"),
        TORCHINDUCTOR_COMPILE_THREADS="1",
        OMP_NUM_THREADS="1",
        **torch_env(),
    )
    with open(run / "torch_logs.txt", "wb") as err:
        p = subprocess.run(
            [sys.executable, str(base / "workload.py"), str(run / "counters.json")],
            cwd=run,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            timeout=900,
        )
    assert p.returncode == 0, (run / "torch_logs.txt").read_text()[-3000:]


# ----------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def gpu_wh(tmp_path_factory) -> str:
    wh = str(tmp_path_factory.mktemp("gpu") / "wh")
    pt2logs.ingest([str(fixture_path("gpu"))], wh)
    return wh


def rows(con, table: str, cols: str, run_id: str, source: str) -> list[tuple]:
    q = f"SELECT {cols} FROM {table}_all_sources WHERE run_id = ? AND source = ?"
    return sorted(con.execute(q, [run_id, source]).fetchall(), key=repr)


def check_run(con, run_id: str, key: tuple[str, str]) -> None:
    """The stderr capture of a run agrees with its trace."""
    assert rows(con, "recompiles", RC, run_id, "torch_logs") == rows(
        con, "recompiles", RC, run_id, "trace"
    )
    assert rows(con, "graph_breaks", GB, run_id, "torch_logs") == rows(
        con, "graph_breaks", GB, run_id, "trace"
    )
    # a failed compile the text reports (WON'T CONVERT + traceback) is the trace's failure, same identity
    text_fails = rows(con, "failures", FL, run_id, "torch_logs")
    # restarts are not in the text's failures; the recompile limit's refusal (Unsupported) is no WON'T CONVERT
    trace_fails = [
        r for r in rows(con, "failures", FL, run_id, "trace") if not r[-1] and r[0] != "Unsupported"
    ]
    assert text_fails == trace_fails
    n_trace_kernels = len(rows(con, "kernels", KN, run_id, "trace"))
    if key in OUTPUT_CODE:
        assert rows(con, "kernels", KN, run_id, "torch_logs") == rows(
            con, "kernels", KN, run_id, "trace"
        )
        assert rows(con, "extern_calls", EX, run_id, "torch_logs") == rows(
            con, "extern_calls", EX, run_id, "trace"
        )
        # documented: the text does not say whether the code came from the FX graph cache
        assert (
            con.execute(
                "SELECT count(*) FROM kernels_all_sources WHERE run_id = ? AND source = 'torch_logs' "
                "AND cache_hit IS NOT NULL",
                [run_id],
            ).fetchone()[0]
            == 0
        )
    else:
        # documented: TORCH_LOGS without output_code has no kernels
        assert rows(con, "kernels", KN, run_id, "torch_logs") == [] and n_trace_kernels > 0
    # documented: a graph break's function is known to the text only through a Recompiling line
    # of the same frame; where both name it, they agree
    pairs = con.execute(
        """
            SELECT t.compile_id, t.rank, t.co_name, l.co_name FROM graph_breaks_all_sources t
            JOIN graph_breaks_all_sources l ON t.run_id = l.run_id AND t.rank IS NOT DISTINCT FROM l.rank
              AND t.compile_id = l.compile_id AND t.user_filename = l.user_filename AND t.user_lineno = l.user_lineno
            WHERE t.run_id = ? AND t.source = 'trace' AND l.source = 'torch_logs'""",
        [run_id],
    ).fetchall()
    assert len(pairs) == len(rows(con, "graph_breaks", GB, run_id, "trace"))
    for cid, rank, t_name, l_name in pairs:
        assert l_name is None or l_name == t_name, (cid, rank)
    # the refused compile of a recompile-limit hit has no frame of its own in the trace (no
    # dynamo_start): it takes the frame of the compile whose guard failed, which the warning names too
    pairs = con.execute(
        """
            SELECT t.compile_id, t.is_limit_hit, t.co_name, l.co_name FROM recompiles_all_sources t
            JOIN recompiles_all_sources l ON t.run_id = l.run_id AND t.rank IS NOT DISTINCT FROM l.rank
              AND t.compile_id = l.compile_id
            WHERE t.run_id = ? AND t.source = 'trace' AND l.source = 'torch_logs'""",
        [run_id],
    ).fetchall()
    assert len(pairs) == len(rows(con, "recompiles", RC, run_id, "trace"))
    for cid, _limit, t_name, l_name in pairs:
        assert t_name == l_name, cid


def run_ids(con) -> dict[str, str]:
    return dict(con.execute("SELECT name, run_id FROM runs").fetchall())


# ----------------------------------------------------------------------------- the fixtures


@pytest.mark.parametrize("scenario", GPU)
def test_gpu_stderr_agrees_with_the_trace(gpu_wh, scenario):
    con = pt2logs.connect(gpu_wh)
    run_id = run_ids(con)[scenario]
    formats = con.execute("SELECT formats FROM runs WHERE run_id = ?", [run_id]).fetchone()[0]
    assert formats == ["counters_json", "torch_logs", "torch_trace"]
    check_run(con, run_id, ("gpu", scenario))


def test_gpu_counts_per_run(gpu_wh):
    """The numbers behind the agreement (so that it is not trivially 0 == 0)."""
    con = pt2logs.connect(gpu_wh)
    got = {}
    for name, source, rc, gb in con.execute("""
            SELECT r.name, s.source, sum(s.rc), sum(s.gb) FROM runs r JOIN (
              SELECT run_id, source, count(*) AS rc, 0 AS gb FROM recompiles_all_sources GROUP BY ALL
              UNION ALL SELECT run_id, source, 0, sum(occurrences) FROM graph_breaks_all_sources GROUP BY ALL) s
            USING (run_id) GROUP BY ALL""").fetchall():
        got[(name, source)] = (rc, gb)
    assert got[("graph_breaks", "trace")] == got[("graph_breaks", "torch_logs")] == (7, 11)
    assert got[("recompile_causes", "trace")] == got[("recompile_causes", "torch_logs")] == (5, 0)
    assert got[("compile_failure", "trace")] == got[("compile_failure", "torch_logs")] == (0, 1)


def test_samples_are_five_runs_of_three_formats(sample_ingest):
    wh, res = sample_ingest
    assert res.runs_new == 5
    assert sorted(p.rsplit("/", 1)[-1] for p, _ in res.skipped) == ["README.md", "generate.py"]
    con = pt2logs.connect(wh)
    runs = {
        name: (n_files, formats)
        for name, n_files, formats in con.execute(
            "SELECT name, n_files, formats FROM runs"
        ).fetchall()
    }
    assert set(runs) == set(SAMPLE)
    for name, (n_files, formats) in runs.items():
        assert formats == ["counters_json", "torch_logs", "torch_trace"], name
        assert n_files == (5 if name == "ddp_2rank" else 3), name


@pytest.mark.parametrize("scenario", SAMPLE)
def test_sample_stderr_agrees_with_the_trace(sample_ingest, scenario):
    con = pt2logs.connect(sample_ingest[0])
    check_run(con, run_ids(con)[scenario], ("sample", scenario))


def test_sample_limit_hit_and_ranks(sample_ingest):
    con = pt2logs.connect(sample_ingest[0])
    ids = run_ids(con)
    hits = con.execute(
        "SELECT source, compile_id, cause FROM recompiles_all_sources WHERE run_id = ? AND is_limit_hit ORDER BY 1",
        [ids["recompiles"]],
    ).fetchall()
    assert hits == [
        ("torch_logs", "5/4", "recompile_limit_hit"),
        ("trace", "5/4", "recompile_limit_hit"),
    ]
    ranks = con.execute(
        "SELECT source, rank, count(*) FROM recompiles_all_sources WHERE run_id = ? GROUP BY ALL ORDER BY ALL",
        [ids["ddp_2rank"]],
    ).fetchall()
    assert ranks == [("torch_logs", 1, 2), ("trace", 1, 2)]  # rank 1 alone recompiles
    gb = con.execute(
        "SELECT source, rank, sum(occurrences) FROM graph_breaks_all_sources WHERE run_id = ? GROUP BY ALL ORDER BY ALL",
        [ids["ddp_2rank"]],
    ).fetchall()
    assert gb == [("torch_logs", 0, 3), ("torch_logs", 1, 4), ("trace", 0, 3), ("trace", 1, 4)]


def test_text_times_equal_trace_times_when_the_machine_ran_utc(gpu_wh):
    """The glog prefix is local time; the fixtures' machines ran UTC, so a stderr message and the
    trace record of the same event are at the same time, within the ms between the two log calls
    (elsewhere they differ by the machine's UTC offset: docs/inputs.md)."""
    con = pt2logs.connect(gpu_wh)
    pairs = con.execute("""SELECT t.ts, l.ts FROM recompiles_all_sources t JOIN recompiles_all_sources l
                           ON t.run_id = l.run_id AND t.rank IS NOT DISTINCT FROM l.rank AND t.compile_id = l.compile_id
                           WHERE t.source = 'trace' AND l.source = 'torch_logs'""").fetchall()
    assert len(pairs) >= 10 and all(abs((a - b).total_seconds()) < 0.01 for a, b in pairs)


def test_default_views_keep_one_source_per_run(gpu_wh, sample_ingest, tmp_path):
    for wh in (gpu_wh, sample_ingest[0]):
        con = pt2logs.connect(wh)
        for table in ("recompiles", "graph_breaks", "kernels", "extern_calls"):
            mixed = con.execute(
                f"SELECT run_id FROM {table} GROUP BY 1 HAVING count(DISTINCT source) > 1"
            ).fetchall()
            assert mixed == [], table
            assert con.execute(f"SELECT DISTINCT source FROM {table}").fetchall() in (
                [("trace",)],
                [],
            )
            n_all = con.execute(f"SELECT count(*) FROM {table}_all_sources").fetchone()[0]
            n_trace = con.execute(
                f"SELECT count(*) FROM {table}_all_sources WHERE source = 'trace'"
            ).fetchone()[0]
            assert con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == n_trace <= n_all
    # a run that has only a stderr capture: its rows are the default
    only = tmp_path / "only_stderr"
    only.mkdir()
    shutil.copy(fixture_path("torch_logs", "recompiles.txt"), only / "stderr.txt")
    wh = str(tmp_path / "wh")
    res = pt2logs.ingest([str(only)], wh)
    assert res.runs_new == 1 and not res.skipped
    con = pt2logs.connect(wh)
    assert con.execute("SELECT name, formats FROM runs").fetchall() == [
        ("only_stderr", ["torch_logs"])
    ]
    assert con.execute("SELECT source, count(*) FROM recompiles GROUP BY 1").fetchall() == [
        ("torch_logs", 10)
    ]


# ----------------------------------------------------------------------------- a real run


@pytest.mark.slow
def test_real_run_all_sources_agree(tmp_path):
    run = real_run()
    wh = str(tmp_path / "wh")
    res = pt2logs.ingest([str(run)], wh)
    assert res.runs_new == 1 and res.errors == 0
    con = pt2logs.connect(wh)
    ((run_id, formats),) = con.execute("SELECT run_id, formats FROM runs").fetchall()
    assert formats == ["compile_debug", "counters_json", "torch_logs", "torch_trace"]
    check_run(con, run_id, ("real", "rr"))
    # the debug folder's output_code.py files: one per graph compiled by inductor, the same kernels
    # (no compile id there: the folder names only the AOT graph)
    dbg = sorted(
        r[0]
        for r in con.execute(
            "SELECT kernel_name FROM kernels_all_sources WHERE source = 'compile_debug'"
        ).fetchall()
    )
    trace = sorted(
        r[0]
        for r in con.execute(
            "SELECT kernel_name FROM kernels_all_sources WHERE source = 'trace'"
        ).fetchall()
    )
    assert dbg == trace and len(dbg) == 4
    # counters agree with the tables: two graph-break reports, one dtype recompile per graph, one refusal
    counters = dict(
        ((c, n), v)
        for c, n, v in con.execute("SELECT category, name, value FROM counters").fetchall()
    )
    assert (
        counters[("stats", "unique_graphs")]
        == con.execute(
            "SELECT count(*) FROM compilation_metrics WHERE kind = 'compilation_metrics' AND has_guarded_code"
        ).fetchone()[0]
    )
    assert (
        sum(v for (c, _), v in counters.items() if c == "graph_break")
        == con.execute("SELECT sum(occurrences) FROM graph_breaks").fetchone()[0]
    )
    assert con.execute("SELECT count(DISTINCT function) FROM compile_times").fetchone()[0] > 10


def test_a_folder_mixing_every_format(tmp_path):
    """`pt2logs ingest` on one folder holding every input format: each becomes the run it describes."""
    from tests.readers.test_compile_debug import make_debug_folder
    from tests.readers.test_tlparse_dir import tlparse

    mixed = tmp_path / "mixed"
    shutil.copytree(fixture_path("gpu", "graph_breaks"), mixed / "gpu_graph_breaks")
    _, out = tlparse(
        sorted(fixture_path("gpu", "train_loop", "trace").glob("*.log")), tmp_path / "tlwork"
    )
    shutil.copytree(out, mixed / "tl_out")
    make_debug_folder(mixed / "debug")
    (mixed / "lone_stderr").mkdir()
    shutil.copy(fixture_path("torch_logs", "recompiles.txt"), mixed / "lone_stderr" / "stderr.txt")
    (mixed / "counters_only").mkdir()
    shutil.copy(
        fixture_path("torch_logs", "counters.json"), mixed / "counters_only" / "counters.json"
    )
    shutil.copy(fixture_path("torch_logs", "compile_times.txt"), mixed / "compile_times.txt")
    wh = str(tmp_path / "wh")
    res = pt2logs.ingest([str(mixed)], wh)
    assert res.errors == 0
    skipped = sorted(Path(p).name for p, _ in res.skipped)
    assert skipped == [
        "aot_model___0_debug.log",
        "aot_model___0_debug.log",
        "tl_out",
    ]  # empty logs; tlparse's report
    con = pt2logs.connect(wh)
    runs = dict(con.execute("SELECT name, formats FROM runs").fetchall())
    assert runs == {
        "gpu_graph_breaks": ["counters_json", "torch_logs", "torch_trace"],
        "tl_out": ["tlparse_dir"],
        "debug/job": ["compile_debug", "torch_logs", "torch_trace"],
        "lone_stderr": ["torch_logs"],
        "counters_only": ["counters_json"],
        "mixed": ["compile_times"],
    }
    per_run = dict(
        con.execute(
            "SELECT r.name, list(DISTINCT k.source) FROM kernels k JOIN runs r USING (run_id) GROUP BY 1"
        ).fetchall()
    )
    assert per_run == {
        "gpu_graph_breaks": ["trace"],
        "tl_out": ["tlparse_dir"],
        "debug/job": ["trace"],
    }
    assert con.execute("SELECT count(DISTINCT run_id) FROM log_lines").fetchone()[0] == 3
    assert con.execute("SELECT count(DISTINCT run_id) FROM counters").fetchone()[0] == 2
    assert con.execute("SELECT count(DISTINCT run_id) FROM compile_times").fetchone()[0] == 2

"""Dynamic shapes and CUDA-graph skips on a real torch 2.13 CPU run (tests/shapes_workload.py under
TORCH_DTRACE, with TORCH_LOGS=cudagraphs on its stderr): the rows, the same on the native and the pure
Python trace path, from the text capture alone too, and the queries that read them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import ROOT, shared_dir, tables_rows

import pt2logs
from pt2logs.analysis import cudagraphs
from pt2logs.query.queries import run_named

#: the line of the workload that mutates an input (the CUDA-graph skip's user line)
ADD_LINE = 1 + (ROOT / "tests" / "shapes_workload.py").read_text().splitlines().index(
    "    buf.add_(1)"
)

pytestmark = pytest.mark.slow  # one real torch.compile workload per session (~10 s of CPU)


def _run(dest: Path) -> None:
    env = {
        **os.environ,
        "TORCH_DTRACE": str(dest / "trace"),
        "TORCH_LOGS": "cudagraphs",
        "TORCHINDUCTOR_CACHE_DIR": str(dest / "cache"),
    }
    with open(dest / "torch_logs.txt", "wb") as err:
        subprocess.run(
            [sys.executable, str(ROOT / "tests" / "shapes_workload.py")],
            env=env,
            stderr=err,
            stdout=subprocess.DEVNULL,
            check=True,
            timeout=300,
        )


@pytest.fixture(scope="module")
def run_dir() -> Path:
    pytest.importorskip("torch")
    return shared_dir("shapes_run", _run)


@pytest.fixture(scope="module")
def both(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The run ingested twice: the native trace path and the pure Python one (PT2LOGS_NATIVE=0)."""
    out = {}
    for flag in ("1", "0"):
        wh = str(tmp_path_factory.mktemp(f"shapes_native{flag}") / "wh")
        old = os.environ.get("PT2LOGS_NATIVE")
        os.environ["PT2LOGS_NATIVE"] = flag
        try:
            pt2logs.ingest([str(run_dir)], wh)
        finally:
            if old is None:
                os.environ.pop("PT2LOGS_NATIVE", None)
            else:
                os.environ["PT2LOGS_NATIVE"] = old
        out[flag] = wh
    return out


def rows(wh: str, sql: str) -> list[tuple]:
    con = pt2logs.connect(wh)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_native_and_python_paths_make_the_same_rows(both):
    drops = {t: ("txn", "ingest_date", "run_id") for t in ("dynamic_shapes", "cudagraph_skips")}
    native, python = tables_rows(both["1"], drops), tables_rows(both["0"], drops)
    assert native == python
    assert len(native["dynamic_shapes"]) >= 10 and native["cudagraph_skips"]


def test_a_marked_dim_specialized_by_a_branch_names_its_line(both):
    spec = rows(
        both["1"],
        "SELECT sources, value, reason, frame_file, frame_code, compile_id FROM dynamic_shapes "
        "WHERE event = 'specialization' ORDER BY compile_id",
    )
    # mark_dynamic (the compile fails: ConstraintViolationError) and maybe_mark_dynamic (allowed)
    assert [(s, v, r, f, c) for s, v, r, f, c, _ in spec] == [
        (
            ["L['x'].size()[0]"],
            "8",
            "range_refined_to_singleton",
            "shapes_workload.py",
            "if x.shape[0] == 8:",
        )
    ] * 2
    failed = rows(both["1"], "SELECT fail_type FROM failures WHERE compile_id = '0/0'")
    assert failed == [("ConstraintViolationError",)]
    q = run_named(pt2logs.connect(both["1"]), "shape_specializations", {}).to_pylist()
    assert [(r["sources"], r["values"], r["compiles"], r["code"]) for r in q] == [
        ("L['x'].size()[0]", "8", 2, "if x.shape[0] == 8:")
    ]


def test_symbols_unbacked_values_and_data_dependent_guards(both):
    got = rows(
        both["1"],
        "SELECT event, symbol, sources, value_range, expr, frame_code FROM dynamic_shapes "
        "WHERE event <> 'specialization' ORDER BY line_no",
    )
    events = [g[0] for g in got]
    assert events.count("create_symbol") == 3 and events.count("create_unbacked_symbol") == 4
    # under TORCH_DTRACE torch writes guard_added and guard_added_fast for one guard: one row
    assert "guard_fast" not in events and events.count("guard") == 4
    assert (
        "create_symbol",
        "s77",
        ["L['x'].size()[0]"],
        "[2, int_oo]",
        None,
        "return x.sum(0) * x.shape[0]",
    ) in got
    assert ("guard", "zuf0", None, None, "zuf0 >= 0.0", "torch._check(n >= 0)") in got
    # the branch graph-broken, then failing the compile under fullgraph=True; no user stack in the record:
    # the line that made its symbol
    dds = [g[1:] for g in got if g[0] == "data_dependent_error"]
    assert dds == [("u0", None, None, "u0 > 3", "n = x.sum().int().item()")] * 2
    q = run_named(pt2logs.connect(both["1"]), "dynamic_shapes", {"event": "create_unbacked_symbol"})
    assert sorted(r["symbol"] for r in q.to_pylist()) == ["u0", "u0", "u0", "zuf0"]


def test_cudagraph_skip_from_the_metrics_and_from_the_log(both, run_dir, tmp_path):
    """The cudagraphs backend on a CPU: torch's own check says cpu device, in the compile's metrics and in
    a [__cudagraphs] line (torch 2.13 writes the prefix twice: read once)."""
    trace = rows(
        both["1"],
        "SELECT source, event, reason, reason_kind, co_name, frame_file, frame_line FROM cudagraph_skips",
    )
    assert trace == [
        (
            "trace",
            "skip",
            "cpu device (arg0_1)",
            "cpu_device",
            "mutated",
            "shapes_workload.py",
            ADD_LINE,
        )
    ]
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(run_dir / "torch_logs.txt")], wh)
    (text,) = rows(
        wh, "SELECT source, event, reason, reason_kind, compile_id, frame_line FROM cudagraph_skips"
    )
    assert text == (
        "torch_logs",
        "skip",
        "cpu device (arg0_1)",
        "cpu_device",
        trace_cid(both),
        ADD_LINE,
    )
    q = run_named(pt2logs.connect(both["1"]), "cudagraph_skips", {}).to_pylist()
    assert [(r["reason_kind"], r["functions"], r["count"]) for r in q] == [
        ("cpu_device", "mutated", 1)
    ]


def trace_cid(both) -> str:
    return rows(both["1"], "SELECT compile_id FROM cudagraph_skips")[0][0]


def test_event_coverage_says_what_each_kind_feeds(both):
    q = run_named(pt2logs.connect(both["1"]), "event_coverage", {}).to_pylist()
    by = {(r["kind"], r["artifact"]): r for r in q}
    assert by[("symbolic_shape_specialization", "")]["tables"] == "dynamic_shapes"
    assert by[("symbolic_shape_specialization", "")]["records"] == 2
    assert (
        by[("describe_tensor", "")]["status"] == "kept raw"
        and by[("describe_tensor", "")]["tables"] == ""
    )
    # a pattern of the kept-raw list (torch builds the name from the frame's co_name)
    bytecode = [r for (k, a), r in by.items() if a.endswith("_ORIGINAL_BYTECODE")]
    assert bytecode and all(r["status"] == "kept raw" for r in bytecode)
    assert not [r for r in q if r["status"] == "unknown"]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        # torch's own words (cudagraph_utils.py format_default_skip_message, get_mutation_stack_trace;
        # cudagraph_trees.py; maybe_warning_due_to_dynamic_shape), as the installed torch formats them
        # the user function the stack ends in when the message names none
        ("mutation", ("skip", "mutated inputs (1 instances)", "mutated_inputs", "step")),
        (
            "rerecord_limit",
            ("rerecord_limit", "static input data pointer changed", "rerecord_limit", "7"),
        ),
        ("rerecord", ("rerecord", "cudagraph managed tensor data pointer changed", "other", "fn")),
        ("sizes", ("too_many_sizes", "distinct input sizes", "dynamic_shapes", None)),
    ],
)
def test_cudagraph_messages_in_torchs_words(text, want):
    torch = pytest.importorskip("torch")
    from torch._inductor import cudagraph_utils as cu

    msgs = {
        "mutation": cu.format_default_skip_message("mutated inputs (1 instances)")
        + '. Found from : \n   File "/w/train.py", line 12, in step\n    buf.add_(1)\n',
        "rerecord_limit": "skipping cudagraph due to function 7 exceeding max re-recording limit (=8) on "
        "cudagraph node 3 due to static input data pointer changed.",
        "rerecord": "[0/0] Re-recording function=fn, mode=CompilationMode.FORWARD, reason=cudagraph managed "
        "tensor data pointer changed",
        "sizes": None,
    }
    if text == "sizes":
        import logging

        logs: list[str] = []
        h = logging.Handler()
        h.emit = lambda r: logs.append(r.getMessage())  # type: ignore[method-assign]
        cu.cudagraphs_log.addHandler(h)
        old = cu.cudagraphs_log.level
        cu.cudagraphs_log.setLevel(logging.WARNING)
        try:
            with torch._inductor.config.patch({"triton.cudagraph_dynamic_shape_warn_limit": 1}):
                cu.maybe_warning_due_to_dynamic_shape({(1,): None, (2,): None}, (3,))
        finally:
            cu.cudagraphs_log.removeHandler(h)
            cu.cudagraphs_log.setLevel(old)
        msgs["sizes"] = logs[0]
    row = cudagraphs.parse(msgs[text])
    assert (row["event"], row["reason"], row["reason_kind"], row["function"]) == want
    if text == "mutation":
        assert (row["user_file"], row["user_line"]) == ("/w/train.py", 12)
    if text == "sizes":
        assert row["count"] == 3


def test_advice_for_specializations_data_dependent_guards_and_cudagraph_skips(both):
    items = run_named(pt2logs.connect(both["1"]), "advice", {"limit": 100}).to_pylist()
    by = {r["id"]: r for r in items}
    assert by["dynamic_dim_specialized"]["subject"] == "L['x'].size()[0]"
    assert by["dynamic_dim_specialized"]["failures"] == 1
    dd = by["data_dependent_guard"]
    assert dd["subject"] == "u0 > 3" and dd["frames"].startswith("data_dependent_fullgraph (")
    cg = by["cudagraph_cpu_tensors"]
    assert cg["subject"] == "cpu_device" and "cpu device (arg0_1)" in cg["evidence"]
    assert cg["location"] == f"shapes_workload.py:{ADD_LINE}"
    # the graph-broken (not fullgraph) branch stays the data_dependent_branch item
    assert "data_dependent_branch" in by


def test_mutated_inputs_and_rerecording_rules_match_torchs_words(tmp_path):
    """The CUDA-graph rules on a [__cudagraphs] capture written as torch 2.13 writes it (the message from
    torch's own formatter, the glog prefix of its cudagraphs logger)."""
    pytest.importorskip("torch")
    from torch._inductor.cudagraph_utils import format_default_skip_message

    pre = "W1127 02:21:37.062000 16427 torch/_inductor/cudagraph_utils.py:380] [{cid}] [__cudagraphs] "
    msg = format_default_skip_message("mutated inputs (1 instances)") + ". Found from : "
    lines = [
        pre.format(cid="0/0") + msg,
        pre.format(cid="0/0") + '   File "/w/train.py", line 12, in step',
        pre.format(cid="0/0") + "    buf.add_(1)",
        pre.format(cid="1/0")
        + "skipping cudagraph due to function 3 exceeding max re-recording limit (=8) on cudagraph "
        "node 2 due to static input data pointer changed.",
    ]
    f = tmp_path / "torch_logs.txt"
    f.write_text("\n".join(lines) + "\n")
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(f)], wh)
    items = run_named(pt2logs.connect(wh), "advice", {"limit": 100}).to_pylist()
    assert sorted(r["id"] for r in items) == ["cudagraph_mutated_inputs", "cudagraph_rerecording"]
    (m,) = [r for r in items if r["id"] == "cudagraph_mutated_inputs"]
    assert m["location"] == "/w/train.py:12" and "mutated inputs (1 instances)" in m["evidence"]


def test_every_table_the_trace_filled_is_one_event_coverage_names(both, sample_wh):
    """FEEDS is not a hand list gone stale: each table with trace rows in a real run is named by a kind the
    run holds (event_coverage's tables)."""
    from pt2logs.tables import TABLES

    for wh in (both["1"], sample_wh):
        con = pt2logs.connect(wh)
        fed = {
            t
            for r in run_named(con, "event_coverage", {}).to_pylist()
            for t in r["tables"].split(", ")
            if t
        }
        filled = {
            name
            for name, t in TABLES.items()
            if "source" in t.names
            and con.execute(f"SELECT count(*) FROM \"{name}\" WHERE source = 'trace'").fetchone()[0]
        }
        assert filled and filled <= fed, filled - fed


_HOSTILE = {
    "symbol": 123,
    "sources": "not a list",
    "user_stack": [1, {"line": 2**40, "filename": 99999, "name": 5, "loc": ["x"]}],
    "vr": {"lower": 1},
    "expr": ["u0 > 3"],
    "symbol_to_sources": [],
    "value": None,
    "val": 2**70,
    "stack": "not frames",
    "reason": {"r": 1},
    "prefix": 7,
}


def test_hostile_shape_records_lose_nothing_and_agree_on_both_paths(run_dir, tmp_path, monkeypatch):
    """Each shape record of the real trace with its fields replaced by values of the wrong type (and a
    cudagraph_skip_reason that is not text): every record still a row, the file read without an error,
    the same rows on the native and the Python path."""
    import json

    (trace,) = (run_dir / "trace").glob("*.log")
    kinds = (
        "create_symbol",
        "create_unbacked_symbol",
        "symbolic_shape_specialization",
        "guard_added",
        "guard_added_fast",
        "guard_on_data_dependent_error",
    )
    out, n = [], 0
    for line in trace.read_text().splitlines():
        brace = line.find("{")
        if brace > 0 and any(line[brace:].startswith('{"' + k + '"') for k in kinds):
            env = json.loads(line[brace:])
            kind = next(iter(env))
            env[kind] = {k: _HOSTILE.get(k, v) for k, v in env[kind].items()}
            line, n = line[:brace] + json.dumps(env), n + 1
        elif brace > 0 and '"cudagraph_skip_reason": "' in line:
            env = json.loads(line[brace:])
            env["compilation_metrics"]["cudagraph_skip_reason"] = 5
            line = line[:brace] + json.dumps(env)
        out.append(line)
    d = tmp_path / "in"
    d.mkdir()
    (d / trace.name).write_text("\n".join(out) + "\n")
    got = {}
    for flag in ("1", "0"):
        monkeypatch.setenv("PT2LOGS_NATIVE", flag)
        wh = str(tmp_path / f"wh{flag}")
        pt2logs.ingest([str(d)], wh)
        assert rows(wh, "SELECT kind FROM ingest_errors WHERE severity = 'error'") == []
        drops = {t: ("txn", "ingest_date", "run_id") for t in ("dynamic_shapes", "cudagraph_skips")}
        got[flag] = tables_rows(wh, drops)
    assert got["1"] == got["0"]
    # guard_added_fast right after its guard_added is still one row; every other record is one
    assert n > 10 and len(got["1"]["dynamic_shapes"]) >= n - 4
    assert got["1"]["cudagraph_skips"] == []

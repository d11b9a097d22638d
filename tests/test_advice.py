"""The advice table on real captures: each row fires on its case, with the run's own evidence, and
not where it must not. Captures: the sample traces (torch 2.13), the shared fixtures (tlparse's test
logs, torch 2.11 GPU runs, pasted TORCH_LOGS text) and a real torch 2.13 CPU run of
tests/advice_workload.py made here."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.conftest import ROOT, fixture_path, shared_dir

import pt2logs
from pt2logs.query.advice import AdviceError, load_rules, parse_rules
from pt2logs.query.queries import run_named


def items(wh: str, run: str | None = None) -> list[dict]:
    con = pt2logs.connect(wh)
    params = {"limit": 100000} | ({"run_id": run} if run else {})
    return run_named(con, "advice", params).to_pylist()


def of(rows: list[dict], rule: str, frame: str | None = None) -> list[dict]:
    return [r for r in rows if r["id"] == rule and (frame is None or f"{frame} (" in r["frames"])]


@pytest.fixture(scope="session")
def own_run() -> Path:
    """tests/advice_workload.py run once under TORCH_TRACE + TORCH_LOGS (real torch, CPU, eager backend)."""
    pytest.importorskip("torch")
    return shared_dir("advice_run", capture)  # tests/conftest.py BACKGROUND


def capture(run: Path) -> None:
    env = {
        **os.environ,
        "TORCH_TRACE": str(run / "trace"),
        "TORCH_LOGS": "recompiles,graph_breaks",
        "TORCHINDUCTOR_CACHE_DIR": str(run / "cache"),
    }
    with open(run / "torch_logs.txt", "wb") as err:
        subprocess.run(
            [sys.executable, str(ROOT / "tests" / "advice_workload.py")],
            env=env,
            stderr=err,
            stdout=subprocess.DEVNULL,
            check=True,
            timeout=300,
        )


@pytest.fixture(scope="session")
def own_wh(own_run: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    wh = str(tmp_path_factory.mktemp("advice_wh") / "wh")
    pt2logs.ingest([str(own_run)], wh)
    return wh


@pytest.mark.slow  # a real torch.compile workload (once per session, ~15 s)
def test_the_stderr_capture_alone_gives_the_same_advice(own_run, own_wh, tmp_path):
    """TORCH_LOGS text without the trace: the same findings, from the text readers' rows."""
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(own_run / "torch_logs.txt")], wh)
    text, trace = items(wh), items(own_wh)
    assert sorted(r["id"] for r in text) == sorted(r["id"] for r in trace)
    (lim,) = of(text, "recompile_limit")
    assert (
        "recompile limit (4), after 4 compiles" in lim["evidence"]
    )  # from the warning, not the config
    assert "not known (these logs have no compile records)" in lim["evidence"]
    (s,) = of(text, "shape_storm")
    assert "`x dim 0`: 2, 3, 4, 5" in s["evidence"]


@pytest.fixture(scope="session")
def fixtures_wh(tmp_path_factory: pytest.TempPathFactory) -> str:
    wh = str(tmp_path_factory.mktemp("advice_fixtures") / "wh")
    pt2logs.ingest(
        [
            str(fixture_path("gpu")),
            str(fixture_path("tlparse", "multi_rank_logs")),
            str(fixture_path("tlparse", "multi_rank_runtime")),
            str(fixture_path("tlparse", "cache_hit_miss.log")),
            str(fixture_path("torch_logs", "wild_pastes")),
        ],
        wh,
    )
    return wh


@pytest.mark.slow  # a real torch.compile workload (once per session, ~15 s)
def test_shape_storm(own_wh, sample_wh, fixtures_wh):
    own = items(own_wh)
    (s,) = of(own, "shape_storm")
    assert s["frames"].startswith("storm (") and s["recompiles"] == 3
    assert (
        "`x dim 0`: 2, 3, 4, 5" in s["evidence"] and "automatic dynamic shapes off" in s["evidence"]
    )
    assert not of(own, "shape_storm", "auto")  # one change, then automatic dynamic: no storm
    (s,) = of(items(sample_wh, "recompiles"), "shape_storm")
    assert "shape_static (" in s["frames"] and "4, 8, 12" in s["evidence"] and s["recompiles"] == 2
    assert not of(items(sample_wh, "train_step"), "shape_storm") and not of(
        items(sample_wh, "ddp"), "shape_storm"
    )
    (s,) = of(items(fixtures_wh, "multi_rank_logs"), "shape_storm")
    assert "`x dim 0`: 2, 3, 4 … 16, 15 values" in s["evidence"] and s["compile_s"] > 0


def test_a_single_rank_run_says_its_counts_plainly(sample_wh):
    """sample_traces/recompiles (one process): counts with the right plural, no rank named."""
    own = items(sample_wh, "recompiles")
    (s,) = of(own, "shape_storm")
    assert "`shape_static (generate.py:87)` recompiled 2 times" in s["evidence"]
    k = next(r for r in of(own, "python_value") if r["subject"] == "k")
    assert "it changed 1 time in `scale (" in k["evidence"] and "rank" not in k["evidence"]
    (d,) = of(own, "dtype_change", "limited")
    assert "(`limited (generate.py:104)` recompiled 3 times)" in d["evidence"]


@pytest.mark.slow  # a real torch.compile workload (once per session, ~15 s)
def test_python_value(own_wh, sample_wh, fixtures_wh):
    (p,) = of(items(own_wh), "python_value")
    assert p["evidence"].startswith("`off` was 3") and "`return x + off`" in p["evidence"]
    sample = of(items(sample_wh, "recompiles"), "python_value")
    assert {r["subject"] for r in sample} == {"k", "flag"}
    assert "`k` was 2" in next(r["evidence"] for r in sample if r["subject"] == "k")
    t = [r for r in of(items(fixtures_wh, "wild_pastes"), "python_value") if r["subject"] == "t"]
    assert t and "0, 1, 2, 3" in t[0]["evidence"]
    assert not of(items(sample_wh, "compile_failure"), "python_value")


@pytest.mark.slow  # a real torch.compile workload (once per session, ~15 s)
def test_recompile_limit(own_wh, sample_wh, fixtures_wh):
    (lim,) = of(items(own_wh), "recompile_limit")
    assert (
        "storm (" in lim["frames"] and "recompile limit (4)" in lim["evidence"]
    )  # from dynamo_config
    assert (
        "after 4 compiles (refused: 0/4)" in lim["evidence"] and "runs eagerly" in lim["evidence"]
    )
    assert "auto 2 of 8" in lim["evidence"]  # how close the other frames are
    assert (
        lim["recompiles"] == 4 and lim["compile_s"] > 0
    )  # every recompile of the frame is at stake
    (lim,) = of(items(sample_wh, "recompiles"), "recompile_limit")
    assert "limited (" in lim["frames"] and "recompile limit (4)" in lim["evidence"]
    # text logs: the limit the warning names, for its compile
    mochi = [
        r
        for r in of(items(fixtures_wh, "wild_pastes"), "recompile_limit")
        if "1/8" in r["evidence"]
    ]
    assert mochi and "recompile limit (8), after 8 compiles" in mochi[0]["evidence"]
    for run in ("graph_breaks", "train_step", "ddp", "compile_failure"):
        assert not of(items(sample_wh, run), "recompile_limit"), run


@pytest.mark.slow  # a real torch.compile workload (once per session, ~15 s)
def test_data_dependent_branch(own_wh, sample_wh, fixtures_wh):
    (b,) = of(items(own_wh), "data_dependent_branch")
    assert b["evidence"] == "at advice_workload.py:43: `if x.sum() > 0:`" and b["breaks"] == 1
    assert of(items(sample_wh, "graph_breaks"), "data_dependent_branch")
    assert of(items(fixtures_wh, "graph_breaks"), "data_dependent_branch")
    assert not of(items(own_wh), "data_dependent_branch", "explicit")


@pytest.mark.slow  # a real torch.compile workload (once per session, ~15 s)
def test_print_or_logging_in_graph(own_wh, sample_wh):
    own = of(items(own_wh), "print_in_graph")
    assert {r["frames"].split(" (")[0] for r in own} == {"printing", "logs"}
    assert any(r["evidence"] == "`print` at advice_workload.py:33" for r in own)
    assert any(".warning` at advice_workload.py:38" in r["evidence"] for r in own)
    assert of(items(sample_wh, "graph_breaks"), "print_in_graph")
    assert not of(items(sample_wh, "ddp"), "print_in_graph")  # DDP's own Logger is not logging


@pytest.mark.slow  # a real torch.compile workload (once per session, ~15 s)
def test_data_dependent_output(own_wh, fixtures_wh):
    (i,) = of(items(own_wh), "data_dependent_output")
    assert i["evidence"] == "`Tensor.item()` at advice_workload.py:29"
    (n,) = of(items(fixtures_wh, "compile_failure"), "data_dependent_output")
    assert n["subject"] == "aten.nonzero.default"
    assert not of(items(own_wh), "data_dependent_output", "branch")


@pytest.mark.slow  # a real torch.compile workload (once per session, ~15 s)
def test_skipped_function(own_wh, sample_wh):
    (s,) = of(items(sample_wh, "graph_breaks"), "skipped_function")
    assert s["evidence"] == "`sys.getrefcount` (sys) called at generate.py:165" and s["breaks"] == 2
    assert not of(
        items(sample_wh, "ddp"), "skipped_function"
    )  # torch skips its own DDP helpers on purpose
    (s,) = of(items(own_wh), "skipped_function")  # the same C builtin, this run
    assert (
        s["evidence"] == "`sys.getrefcount` (sys) called at advice_workload.py:59"
        and "refcount (" in s["frames"]
    )
    assert not of(
        items(own_wh), "skipped_function", "on_purpose"
    )  # torch.compiler.disable: a break on purpose


@pytest.mark.slow  # a real torch.compile workload (once per session, ~15 s)
def test_backend_failed(own_wh, sample_wh):
    (f,) = of(items(sample_wh, "compile_failure"), "backend_failed")
    assert (
        "in compile 0/0 of `f (" in f["evidence"] and "synthetic backend failure" in f["evidence"]
    )
    assert (
        f["failures"] == 1
        and "TORCHDYNAMO_REPRO_AFTER=aot TORCHDYNAMO_REPRO_LEVEL=2" in f["advice"]
    )
    (f,) = of(items(own_wh), "backend_failed")
    assert "advice workload: synthetic backend failure" in f["evidence"]
    assert not of(
        items(sample_wh, "recompiles"), "backend_failed"
    )  # the limit's failure is not one


@pytest.mark.slow  # a real torch.compile workload (once per session, ~15 s)
def test_dtype_requires_grad_and_identity(own_wh, sample_wh, fixtures_wh):
    (d,) = of(items(own_wh), "dtype_change")
    assert d["evidence"].startswith("`x.dtype` took Float, Double")
    # the refusal at the limit belongs to the limit's item, not counted twice
    (d,) = of(items(sample_wh, "recompiles"), "dtype_change", "limited")
    assert d["recompiles"] == 3 and "Float, Double, Half, BFloat16" in d["evidence"]
    fx = items(fixtures_wh, "recompile_causes")
    (g,) = of(fx, "requires_grad_change")
    assert g["evidence"].startswith("`x.requires_grad` took 0, 1")
    (o,) = of(items(fixtures_wh, "multi_rank_runtime"), "object_identity")
    assert o["subject"] == "fn" and o["recompiles"] > 1
    (g,) = of(items(own_wh), "requires_grad_change")
    assert g["evidence"].startswith("`x.requires_grad` took 0, 1") and "grad (" in g["frames"]
    (o,) = of(items(own_wh), "object_identity")  # a new lambda: another code object
    assert o["evidence"].startswith("`fn` was another object") and o["evidence"].endswith(
        "`return fn(x) + 1`"
    )
    assert not of(items(sample_wh, "recompiles"), "object_identity") and not of(
        items(sample_wh, "recompiles"), "requires_grad_change"
    )


def test_cache_bypass(fixtures_wh, sample_wh):
    (c,) = of(items(fixtures_wh, "cache_hit_miss"), "cache_bypass")
    assert c["subject"] == "aotautograd" and "bypassed 3 times (compile 1/0)" in c["evidence"]
    assert "Unsupported call_function target flex_attention" in c["evidence"] and c["compile_s"] > 0
    for run in ("train_step", "recompiles", "graph_breaks"):  # hits and misses only
        assert not of(items(sample_wh, run), "cache_bypass"), run


def _same_items_as_the_oracle(wh: str) -> int:
    """advice_items() gives the items its former formulation gives (tests/query_oracles), run by run."""
    from tests.query_oracles import add_advice_oracle, canonical

    con = pt2logs.connect(wh)
    add_advice_oracle(con)
    runs = [None] + [r for (r,) in con.execute("SELECT run_id FROM runs").fetchall()]
    for run in runs:
        new = con.execute("SELECT * FROM advice_items($r, NULL, NULL, NULL)", {"r": run}).fetchall()
        old = con.execute(
            "SELECT * FROM advice_items_oracle($r, NULL, NULL, NULL)", {"r": run}
        ).fetchall()
        assert canonical([dict(enumerate(x)) for x in new]) == canonical(
            [dict(enumerate(x)) for x in old]
        ), run
    return {
        i
        for (i,) in con.execute(
            "SELECT DISTINCT id FROM advice_items(NULL, NULL, NULL, NULL)"
        ).fetchall()
    }


def test_the_rewritten_matching_finds_the_items_it_found(fixtures_wh):
    # every rule but skipped_function fires in these logs (the samples have that one: test_query_rewrites.py),
    # and those of specializations, data-dependent guards and CUDA-graph skips (no fixture has them:
    # tests/test_dynamic_shapes.py fires them on a real run; the oracle predates CUDA-graph facts)
    assert _same_items_as_the_oracle(fixtures_wh) == {r.id for r in load_rules()} - {
        "skipped_function",
        "dynamic_dim_specialized",
        "data_dependent_guard",
        "cudagraph_mutated_inputs",
        "cudagraph_cpu_tensors",
        "cudagraph_rerecording",
        "cudagraph_skipped",
    }


@pytest.mark.slow  # a real torch.compile workload (once per session, ~15 s)
def test_the_rewritten_matching_finds_the_items_it_found_in_a_real_run(own_wh):
    assert _same_items_as_the_oracle(own_wh)


@pytest.mark.slow  # a real torch.compile workload (once per session, ~15 s)
def test_every_fact_has_at_most_one_item(own_wh):
    con = pt2logs.connect(own_wh)
    total, refused = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE is_limit_hit) FROM recompiles"
    ).fetchone()
    rows = items(own_wh)
    per_fact = sum(
        r["recompiles"] for r in rows if r["id"] != "recompile_limit"
    )  # the limit's item counts its frame's
    # every recompile of the workload is in one item, but auto's single size change (no storm) and the refusal
    assert refused == 1 and per_fact == total - refused - 1
    assert (
        sum(r["breaks"] for r in rows)
        == con.execute("SELECT sum(occurrences) FROM graph_breaks").fetchone()[0] - 2
    )


def test_the_table_is_checked():
    assert {r.id for r in load_rules()} >= {
        "shape_storm",
        "python_value",
        "recompile_limit",
        "data_dependent_branch",
        "print_in_graph",
        "data_dependent_output",
        "skipped_function",
        "backend_failed",
        "dtype_change",
        "requires_grad_change",
        "object_identity",
        "cache_bypass",
    }
    base = '[[rule]]\nid = "x"\nfinding = "f"\nfacts = "recompiles"\nevidence = "{subject}"\nadvice = "a"\n'
    assert parse_rules(base)[0].id == "x"
    for bad in (
        base + "bogus = 1\n",
        base.replace('"recompiles"', '"nowhere"'),
        base.replace("{subject}", "{nope}"),
        base + 'text = "(unclosed"\n',
        base + base,
    ):
        with pytest.raises(AdviceError):
            parse_rules(bad)


def test_advise_command(sample_wh, tmp_path):
    from pt2logs.cli import main

    r = CliRunner().invoke(main, ["advise", "recompiles", "-w", sample_wh], catch_exceptions=False)
    assert r.exit_code == 0 and "Shape storm" in r.output and "mark_dynamic" in r.output
    out = tmp_path / "advice.md"
    r = CliRunner().invoke(
        main, ["advise", "compile_failure", "-w", sample_wh, "-f", "markdown", "-o", str(out)]
    )
    md = out.read_text()
    assert (
        r.exit_code == 0
        and md.startswith("# Advice for compile\\_failure")
        and "## 1. The backend compiler failed" in md
    )
    r = CliRunner().invoke(main, ["advise", "graph_breaks", "-w", sample_wh, "-f", "json"])
    assert {x["id"] for x in json.loads(r.output)} >= {
        "print_in_graph",
        "skipped_function",
        "data_dependent_branch",
    }
    r = CliRunner().invoke(main, ["advise", "train_step", "-w", sample_wh])
    assert r.exit_code == 0 and "0 advice items" in r.output
    r = CliRunner().invoke(main, ["advise", "train_step", "-w", sample_wh, "-f", "csv"])
    assert r.exit_code == 0 and r.output.startswith("run,id,finding,evidence")
    r = CliRunner().invoke(main, ["summary", "recompiles", "-w", sample_wh, "-f", "json"])
    assert [x["id"] for x in json.loads(r.output)["advice"]][0] == "shape_storm"


def test_docs_list_every_rule():
    text = (ROOT / "docs" / "advice.md").read_text()
    assert all(f"`{r.id}`" in text and r.advice in text for r in load_rules())
    assert Path(ROOT / "src" / "pt2logs" / "query" / "advice.toml").is_file()


#: messages as older torch printed them (the sources the table cites), and the rule each must go to
OLD_MESSAGES = [
    # torch/_dynamo/symbolic_convert.py (2.1-2.6): unimplemented("generic_jump " + typestr(value))
    ("graph_breaks", None, "generic_jump TensorVariable()", "data_dependent_branch", None),
    # variables/builtin.py (2.0-2.6)
    (
        "graph_breaks",
        None,
        "call_function BuiltinVariable(print) [ConstantVariable()] {}",
        "print_in_graph",
        "print",
    ),
    # variables/tensor.py (2.1-2.6): unimplemented("Tensor.item")
    ("graph_breaks", None, "Tensor.item", "data_dependent_output", "Tensor.item()"),
    # torch/_dynamo/utils.py (2.1-2.6): unimplemented(f"dynamic shape operator: {e.func}") (+ "; to enable, ...")
    (
        "graph_breaks",
        None,
        "dynamic shape operator: aten.nonzero.default; to enable, set "
        "torch._dynamo.config.capture_dynamic_output_shape_ops = True",
        "data_dependent_output",
        "aten.nonzero.default",
    ),
    (
        "graph_breaks",
        None,
        "data dependent operator: aten._local_scalar_dense.default; to enable, set "
        "torch._dynamo.config.capture_scalar_outputs = True",
        "data_dependent_output",
        "aten._local_scalar_dense.default",
    ),
    # variables/functions.py (2.2-2.6): f"'skip function {qualname} in file {path}'"
    (
        "graph_breaks",
        None,
        "'skip function helper in file /home/u/proj/lib.py'",
        "skipped_function",
        "helper",
    ),
    (
        "graph_breaks",
        None,
        "'skip function DistributedDataParallel._inside_ddp_forward in file "
        "/opt/conda/lib/python3.10/site-packages/torch/nn/parallel/distributed.py'",
        None,
        None,
    ),
    (
        "graph_breaks",
        None,
        "call torch._dynamo.disable() wrapped function <function f at 0x7f>",
        None,
        None,
    ),
    ("graph_breaks", "gb0025", "Call to `torch._dynamo.graph_break()`", None, None),
    (
        "graph_breaks",
        "gb0179",
        "copy.deepcopy()\nDynamo does not support copy.deepcopy()",
        None,
        None,
    ),
    (
        "failures",
        None,
        "backend='inductor' raised:\nAssertionError: boom",
        None,
        None,
    ),  # exc_type decides
]


@pytest.mark.parametrize("facts,gb_id,text,rule,subject", OLD_MESSAGES)
def test_older_torch_messages_go_to_their_rule(facts, gb_id, text, rule, subject):
    """The generated CASE (DuckDB's regular expressions, as advice_items() runs it) on messages of torch 2.0-2.6."""
    import duckdb

    from pt2logs.query.advice import match_sql

    sql = match_sql(load_rules())
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE f AS SELECT ? AS facts, NULL::VARCHAR AS cause, NULL::VARCHAR AS guard_kind, false AS limit_hit,"
        " ?::VARCHAR AS gb_id, NULL::VARCHAR AS exc_type, NULL::VARCHAR AS outcome, ? AS text",
        [facts, gb_id, text],
    )
    (got,) = con.execute(f"SELECT {sql['RULE_CASE']} FROM f").fetchone()
    assert got == rule
    if subject:
        con.execute("CREATE TABLE m AS SELECT *, ? AS rule_id FROM f", [rule])
        rules = {r.id: r for r in load_rules()}
        (s,) = con.execute(
            f"SELECT coalesce({sql['SUBJECT_CASE']}, ?) FROM m", [rules[rule].subject_default]
        ).fetchone()
        assert s == subject


def test_the_kind_of_a_fact_is_every_column_a_rule_can_read():
    """advice_items() matches each distinct kind of fact once (MATCH_COLUMNS) and joins the facts to their
    kind by those columns: a rule condition on another column would be matched on a kind that mixes facts."""
    from pt2logs.query.advice import MATCH_COLUMNS, Rule, match_sql, predicate
    from pt2logs.query.macros import macro_sql

    every = Rule(
        id="x",
        finding="x",
        facts="recompiles",
        evidence="x",
        advice="x",
        causes=("c",),
        guard_kinds=("g",),
        limit_hit=True,
        gb_ids=("gb1",),
        text="t",
        not_text="n",
        exc_types=("E",),
        outcomes=("miss",),
    )
    assert set(Rule.__dataclass_fields__) - {
        "id",
        "finding",
        "evidence",
        "advice",
        "cost",
        "min_events",
        "min_values",
        "subject",
        "detail",
        "subject_default",
    } == {
        "facts",
        "causes",
        "guard_kinds",
        "limit_hit",
        "gb_ids",
        "text",
        "not_text",
        "exc_types",
        "outcomes",
    }
    assert set(re.findall(r"\bf\.(\w+)", predicate(every))) == set(MATCH_COLUMNS)
    sql = match_sql((every,))
    assert [c.strip() for c in sql["KIND_COLUMNS"].split(",")] == list(MATCH_COLUMNS)
    assert (
        set(re.findall(r"\bf\.(\w+)", sql["KIND_JOIN"]))
        == set(re.findall(r"\br\.(\w+)", sql["KIND_JOIN"]))
        == set(MATCH_COLUMNS)
    )
    assert "{KIND_" not in macro_sql("advice_items") and "{{" not in macro_sql("advice_items")


def test_markdown_pastes_as_is(fixtures_wh):
    """`advise -f markdown` on a run whose frames are `<lambda>`: log text never becomes HTML or emphasis."""
    import re

    from pt2logs.cli import main

    r = CliRunner().invoke(main, ["advise", "compile_failure", "-w", fixtures_wh, "-f", "markdown"])
    assert r.exit_code == 0
    lines = r.output.splitlines()
    assert (
        lines[0].startswith("# Advice for compile\\_failure")
        and sum(ln.startswith("## ") for ln in lines) == 2
    )
    assert "- **Frames:** `<lambda> (scenarios.py:116)`" in lines
    prose = re.sub(r"`[^`]*`", "", r.output)
    assert "<" not in prose and "bad\\_backend" in prose

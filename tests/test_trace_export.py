"""``pt2logs export perfetto``: the bundled sample runs (real torch 2.13 traces: graph breaks,
recompiles, a failure, two DDP ranks) as a Chrome trace: a valid document (tests/chrome_trace_check.py,
and Perfetto's own trace processor where its binary is available), spans that nest in every thread,
one process per run and rank, and exactly the warehouse's graph breaks, recompiles, cache lookups
and compiles.
"""

from __future__ import annotations

import os
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.chrome_trace_check import check_nesting, check_trace

import pt2logs
from pt2logs.cli import main
from pt2logs.reports.trace_export import ExportStats, chrome_trace

ALL = {"since": "2000-01-01"}


@pytest.fixture(scope="module")
def exported(sample_wh: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("perfetto") / "all.json"
    r = CliRunner().invoke(
        main, ["export", "perfetto", "-w", sample_wh, "--since", ALL["since"], "-o", str(out)]
    )
    assert r.exit_code == 0, r.output
    return out, check_trace(out.read_bytes())


def _run_of_pid(doc: dict) -> dict[int, str]:
    return {
        e["pid"]: re.match(r"run (\w+),", e["args"]["labels"]).group(1)
        for e in doc["traceEvents"]
        if e["name"] == "process_labels"
    }


def test_the_file_is_a_valid_chrome_trace_and_spans_nest(exported: tuple[Path, dict]) -> None:
    _, doc = exported  # check_trace: schema, strict JSON, named processes/threads, nesting
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert (
        spans and check_nesting(spans) >= 3
    )  # phases really nest (dynamo > entire_frame_compile > ...)


def test_one_process_per_run_and_rank(exported: tuple[Path, dict], sample_wh: str) -> None:
    _, doc = exported
    con = pt2logs.connect(sample_wh)
    want = Counter(
        run
        for run, _ in con.sql("SELECT DISTINCT run_id, rank FROM compilation_metrics").fetchall()
    )
    got = Counter(_run_of_pid(doc).values())
    assert got == want and max(want.values()) == 2  # ddp_2rank: two processes
    names = [e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"]
    assert len(names) == len(set(names)) == sum(want.values())


@pytest.mark.parametrize(
    ("cat", "table"),
    [("graph_break", "graph_breaks"), ("recompile", "recompiles"), ("cache", "cache_events")],
)
def test_instants_are_the_warehouse_rows(
    exported: tuple[Path, dict], sample_wh: str, cat: str, table: str
) -> None:
    _, doc = exported
    run_of = _run_of_pid(doc)
    got = Counter(
        run_of[e["pid"]] for e in doc["traceEvents"] if e["ph"] == "i" and e.get("cat") == cat
    )
    con = pt2logs.connect(sample_wh)
    want = Counter(dict(con.sql(f"SELECT run_id, count(*) FROM {table} GROUP BY 1").fetchall()))
    assert got == want and sum(want.values()) > 0
    if cat != "cache":  # each carries its reason
        assert all(e["args"].get("reason") for e in doc["traceEvents"] if e.get("cat") == cat)


def test_compiles_are_spans_on_their_frame(exported: tuple[Path, dict], sample_wh: str) -> None:
    _, doc = exported
    con = pt2logs.connect(sample_wh)
    want = con.sql(
        "SELECT count(*) FROM compilation_metrics WHERE kind IN ('compilation_metrics', 'bwd_compilation_metrics')"
    ).fetchall()[0][0]
    compiles = [
        e
        for e in doc["traceEvents"]
        if e.get("cat") in ("compile", "unfinished") and e["args"].get("record")
    ]
    assert len(compiles) == want
    threads = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in doc["traceEvents"]
        if e["name"] == "thread_name"
    }
    for e in compiles:
        frame = re.match(r"(!\d+/)?\d+", e["args"]["compile_id"]).group(0)
        assert threads[(e["pid"], e["tid"])].split(" (")[0] == f"frame {frame}"


def test_batches_do_not_change_the_document(sample_wh: str) -> None:
    con = pt2logs.connect(sample_wh)
    s1, s2 = ExportStats(), ExportStats()
    whole = b"".join(chrome_trace(con, ALL, s1))
    small = b"".join(chrome_trace(con, ALL, s2, batch_rows=7))
    assert (
        whole == small
        and s1 == s2
        and s1.events == sum(1 for e in check_trace(whole)["traceEvents"] if e["ph"] != "M")
    )


def test_one_run_by_name_and_errors(sample_wh: str, tmp_path: Path) -> None:
    out = tmp_path / "g.json"
    r = CliRunner().invoke(
        main, ["export", "perfetto", "graph_breaks", "-w", sample_wh, "-o", str(out)]
    )
    assert r.exit_code == 0, r.output
    doc = check_trace(out.read_bytes())
    assert {
        e["args"]["name"].split(" · ")[0] for e in doc["traceEvents"] if e["name"] == "process_name"
    } == {"graph_breaks"}
    r = CliRunner().invoke(
        main,
        [
            "export",
            "perfetto",
            "-w",
            sample_wh,
            "--since",
            "2099-01-01",
            "-o",
            str(tmp_path / "n.json"),
        ],
    )
    assert r.exit_code == 1 and "no run matches" in r.output and not (tmp_path / "n.json").exists()
    r = CliRunner().invoke(
        main,
        [
            "export",
            "perfetto",
            "-w",
            sample_wh,
            "--tag",
            "nope=nothing",
            "-o",
            str(tmp_path / "n.json"),
        ],
    )
    assert (
        r.exit_code == 2 and "no run has the tag" in r.output and not (tmp_path / "n.json").exists()
    )
    r = CliRunner().invoke(
        main, ["export", "perfetto", "no_such_run", "-w", sample_wh, "-o", str(tmp_path / "x.json")]
    )
    assert r.exit_code != 0 and "no run matches" in r.output


def test_no_selection_exports_the_newest_run(sample_wh: str, tmp_path: Path) -> None:
    """With no run and no filter the query picks the newest run (the rule resolve_run shares); the file
    says which. An empty warehouse says it is empty, to a file or to stdout."""
    from pt2logs.reports.runs import resolve_run
    from pt2logs.store.warehouse import Warehouse

    newest = resolve_run(pt2logs.connect(sample_wh), None)
    out = tmp_path / "n.json"
    r = CliRunner().invoke(main, ["export", "perfetto", "-w", sample_wh, "-o", str(out)])
    assert r.exit_code == 0, r.output
    doc = check_trace(out.read_bytes())
    assert set(_run_of_pid(doc).values()) == {newest.run_id} and doc["otherData"]["selection"] == {
        "run_id": newest.run_id
    }
    Warehouse(str(tmp_path / "empty")).init()  # a warehouse no run was ingested into
    for o in (str(tmp_path / "e.json"), "-"):
        r = CliRunner().invoke(main, ["export", "perfetto", "-w", str(tmp_path / "empty"), "-o", o])
        assert r.exit_code != 0 and "no runs yet" in r.output and "traceEvents" not in r.output, (
            r.output
        )
    assert not (tmp_path / "e.json").exists()


def test_help_teaches() -> None:
    r = CliRunner().invoke(main, ["export", "perfetto", "--help"])
    assert (
        r.exit_code == 0
        and "ui.perfetto.dev" in r.output
        and "pt2logs export perfetto ddp_2rank" in r.output
    )


def _trace_processor() -> str | None:
    return os.environ.get("PT2LOGS_TRACE_PROCESSOR") or shutil.which("trace_processor_shell")


@pytest.mark.skipif(
    _trace_processor() is None,
    reason="Perfetto's trace_processor_shell is not available (it downloads "
    "it on first use; no internet here): set PT2LOGS_TRACE_PROCESSOR to its path to run this check",
)
def test_perfetto_trace_processor_loads_it(exported: tuple[Path, dict]) -> None:
    from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig

    out, doc = exported
    tp = TraceProcessor(trace=str(out), config=TraceProcessorConfig(bin_path=_trace_processor()))
    n_slices = next(iter(tp.query("SELECT count(*) AS n FROM slice")))
    # every span and every thread-scoped instant is a slice in Perfetto's model
    assert n_slices.n == sum(1 for e in doc["traceEvents"] if e["ph"] in ("X", "i"))
    tp.close()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 30)), max_size=40))
def test_any_spans_are_laid_out_nested(spans: list[tuple[int, int]]) -> None:
    """Spans that overlap in any way (as threads of one process can) go to threads where they nest."""
    from pt2logs.reports.trace_export import _Process

    p, meta = _Process(1), []
    events = [
        {"ph": "X", "pid": 1, "tid": p.tid("compile phases", s, s + d, meta), "ts": s, "dur": d}
        for s, d in sorted(spans, key=lambda x: (x[0], -x[1]))
    ]
    check_nesting(events)
    names = [m["args"]["name"] for m in meta if m["name"] == "thread_name"]
    assert len(names) == len({e["tid"] for e in events}) and len(set(names)) == len(names)
    if len(spans) >= 2 and any(
        a[0] < b[0] < a[0] + a[1] < b[0] + b[1] for a in spans for b in spans
    ):
        assert "compile phases (2)" in names  # a partial overlap needed a second thread

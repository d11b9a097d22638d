"""vLLM runs in queries, summary and the dashboard: cold start in parts, cold vs warm per model.

Inputs reconstructed from vLLM's source (tests/vllm_inputs.py), not captured from a vLLM run.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from tests import vllm_inputs as V

import pt2logs
from pt2logs import dashboard as D
from pt2logs.cli import main
from pt2logs.query.queries import run_named
from pt2logs.reports.compose import summary


@pytest.fixture(scope="module")
def vllm_wh(tmp_path_factory) -> tuple[str, dict[str, list[tuple[str, dict]]]]:
    root = tmp_path_factory.mktemp("vllm_runs")
    wh = str(root / "wh")
    runs = {"cold": V.cold_start_010(), "warm": V.warm_start_010()}
    for name, lines in runs.items():
        (root / name).mkdir()
        (root / name / "stdout.txt").write_text("\n".join(t for t, _ in lines) + "\n")
        pt2logs.ingest([str(root / name)], wh, tags={"model": "qwen3"})
    pt2logs.ingest([str(V.make_trace(root / "traced"))], wh, tags={"model": "qwen3-traced"})
    return wh, runs


def _sum(lines: list[tuple[str, dict]], kind: str) -> float:
    return round(
        sum(e["seconds"] for _, e in lines if e["kind"] == kind and e.get("seconds") is not None), 3
    )


def test_cold_start_in_parts_per_run(vllm_wh):
    wh, runs = vllm_wh
    rows = {r["run"]: r for r in run_named(pt2logs.connect(wh), "vllm_cold_start", {}).to_pylist()}
    cold, warm = rows["cold"], rows["warm"]
    assert (cold["start"], warm["start"]) == ("cold", "warm")
    for r, lines in ((cold, runs["cold"]), (warm, runs["warm"])):
        assert r["dynamo_s"] == pytest.approx(_sum(lines, "dynamo_transform"))
        assert (r["compile_s"] or 0) == pytest.approx(_sum(lines, "compile_range"))
        assert (r["cache_load_s"] or 0) == pytest.approx(_sum(lines, "cache_load"))
        assert r["cudagraph_s"] == pytest.approx(_sum(lines, "cudagraph_capture"))
        assert r["cold_start_s"] == pytest.approx(
            sum(
                _sum(lines, k)
                for k in ("dynamo_transform", "compile_range", "cache_load", "cudagraph_capture")
            )
        )
        assert r["ranges_compiled"] == sum(e["kind"] == "compile_range" for _, e in lines)
        assert r["ranges_loaded"] == sum(e["kind"] == "cache_load" for _, e in lines)
        assert r["model"] == "qwen3"
    traced = rows["trace"]
    assert (
        traced["model"] == "qwen3-traced"
        and traced["piecewise_compiles"] == 6
        and traced["piecewise_s"] > 0
    )


def test_cold_vs_warm_per_model(vllm_wh):
    wh, runs = vllm_wh
    rows = run_named(pt2logs.connect(wh), "vllm_cold_vs_warm", {"tag": "model=qwen3"}).to_pylist()
    assert [(r["model"], r["start"], r["runs"]) for r in rows] == [
        ("qwen3", "cold", 1),
        ("qwen3", "warm", 1),
    ]
    assert rows[0]["compile_s"] == pytest.approx(_sum(runs["cold"], "compile_range"))
    assert rows[1]["cache_load_s"] == pytest.approx(_sum(runs["warm"], "cache_load"))


def test_summary_shows_vllm_only_for_vllm_runs(vllm_wh, sample_wh):
    wh, runs = vllm_wh
    s = summary(pt2logs.connect(wh), "cold")
    keys = [k for k, _, _ in s.sections]
    assert "vllm" in keys and "vllm_ranges" in keys
    ranges = dict((k, t) for k, _, t in s.sections)["vllm_ranges"].to_pylist()
    assert [(r["how"], r["seconds"]) for r in ranges] == [
        ("compiled", e["seconds"]) for _, e in runs["cold"] if e["kind"] == "compile_range"
    ]
    assert not {"vllm", "vllm_ranges"} & {
        k for k, _, _ in summary(pt2logs.connect(sample_wh)).sections
    }
    out = CliRunner().invoke(main, ["summary", "-w", wh, "cold"], terminal_width=160)
    assert out.exit_code == 0 and "vLLM cold start" in out.output and "dynamic shape" in out.output


def test_dashboard_cards_chart_the_vllm_runs(vllm_wh):
    wh, _ = vllm_wh
    p = D.build(pt2logs.connect(wh), "vllm", since="2020-01-01", until="2030-01-01", warehouse=wh)
    cards = {c.key: c for c in p.cards}
    for key, n in (("vllm_cold_start", 3), ("vllm_cold_vs_warm", 3)):
        c = cards[key]
        assert c.error is None and c.spec is not None, (key, c.error, c.empty)
        assert c.data is not None and c.data.num_rows == n
    weekly = {
        c.key: c for c in D.build(pt2logs.connect(wh), since="2020-01-01", until="2030-01-01").cards
    }
    for key in (
        "vllm_cold_start",
        "vllm_cold_vs_warm",
    ):  # the weekly page shows them: the selection has vLLM runs
        assert weekly[key].spec is not None and weekly[key].rows == cards[key].rows


def test_a_vllm_capture_gives_the_run_its_end(vllm_wh):
    """A vLLM capture is a stderr capture to the outcome rules (its Format's role): the run ends at its last
    line's time. vllm_log was missing from their list of stderr formats, and the end was the file's mtime."""
    wh, _ = vllm_wh
    con = pt2logs.connect(wh)
    (rank,) = [
        r
        for r in run_named(con, "rank_outcomes", {"run_id": "cold"}).to_pylist()
        if r["run"] == "cold"
    ]
    (last,) = con.execute(
        "SELECT max(f.last_ts) FROM files f JOIN runs r USING (run_id) WHERE r.name = 'cold'"
    ).fetchone()
    assert (rank["run_end_from"], rank["run_end"]) == ("stderr", last)


def test_the_weekly_page_sees_vllm_runs_a_later_snapshot_holds(tmp_path):
    """Whether the vLLM tables hold a row is asked once per snapshot of a connection (serve builds the page at every
    request): a server whose views are made again after a vLLM run's commit draws the cards."""
    from tests.conftest import SAMPLES

    from pt2logs.query.views import create_views
    from pt2logs.store.warehouse import Warehouse

    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(SAMPLES / "recompiles")], wh)
    con = pt2logs.connect(wh)
    span = {"since": "2020-01-01", "until": "2030-01-01"}
    assert "vllm_cold_start" not in {c.key for c in D.build(con, **span).cards}
    (tmp_path / "cold").mkdir()
    (tmp_path / "cold" / "stdout.txt").write_text(
        "\n".join(t for t, _ in V.cold_start_010()) + "\n"
    )
    pt2logs.ingest([str(tmp_path / "cold")], wh)
    assert "vllm_cold_start" not in {c.key for c in D.build(con, **span).cards}  # same snapshot
    create_views(con, Warehouse(wh))  # (serve, when it sees the commit)
    cards = {c.key: c for c in D.build(con, **span).cards}
    assert cards["vllm_cold_start"].rows and cards["vllm_cold_start"].spec is not None

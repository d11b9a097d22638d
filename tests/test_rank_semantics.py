"""Ranks: a one-process run has 1 rank, per-rank results keep `rank`, and figures combined over ranks
say so (in the column name, the query's question or the report's text)."""

from __future__ import annotations

import glob
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import pt2logs
from pt2logs.cli import main
from pt2logs.query.queries import run_named


def test_a_run_without_ranks_is_one_process(sample_wh):
    con = pt2logs.connect(sample_wh)
    n = dict(con.execute("SELECT name, n_ranks FROM runs").fetchall())
    assert n == {
        "compile_failure": 1,
        "ddp_2rank": 2,
        "graph_breaks": 1,
        "recompiles": 1,
        "train_step": 1,
    }
    # the raw Parquet says so too (not only the view)
    raw = pq.read_table(glob.glob(f"{sample_wh}/runs/**/*.parquet", recursive=True)[0]).to_pylist()
    assert min(r["n_ranks"] for r in raw) == 1
    assert {r["run"]: r["ranks"] for r in run_named(con, "run_overview", {}).to_pylist()}[
        "recompiles"
    ] == 1


def test_an_old_warehouse_with_n_ranks_0_reads_as_1(sample_wh, tmp_path):
    wh = str(tmp_path / "old")
    shutil.copytree(sample_wh, wh)
    (path,) = glob.glob(f"{wh}/runs/**/*.parquet", recursive=True)
    t = pq.read_table(path)
    zeroed = pa.array(
        [
            0 if len(r) == 0 else n
            for n, r in zip(t["n_ranks"].to_pylist(), t["ranks"].to_pylist(), strict=True)
        ],
        t.schema.field("n_ranks").type,
    )
    pq.write_table(t.set_column(t.schema.get_field_index("n_ranks"), "n_ranks", zeroed), path)
    con = pt2logs.connect(wh)
    assert (
        con.execute("SELECT count(*) FROM _runs_all WHERE n_ranks = 0").fetchall()[0][0] == 4
    )  # as written
    assert con.execute("SELECT min(n_ranks) FROM runs").fetchall()[0][0] == 1
    assert {r["name"]: r["n_ranks"] for r in run_named(con, "runs", {}).to_pylist()}[
        "train_step"
    ] == 1
    r = CliRunner().invoke(main, ["summary", "train_step", "-w", wh, "-f", "json"])
    assert r.exit_code == 0 and '"ranks": 1' in r.output


def test_per_compile_and_per_run_results_keep_the_rank(sample_wh):
    con = pt2logs.connect(sample_wh)
    # each rank's compile 4/0 made 3 backward kernels: 3 and 3, never one row of 6
    per_compile = [
        r
        for r in run_named(con, "kernels_per_compile", {"run_id": "ddp"}).to_pylist()
        if (r["compile_id"], r["graph"]) == ("4/0", "backward")
    ]
    assert sorted((r["rank"], r["kernels"]) for r in per_compile) == [(0, 3), (1, 3)]
    counts = {r["rank"]: r for r in run_named(con, "kernel_counts", {"run_id": "ddp"}).to_pylist()}
    raw = dict(
        con.execute(
            "SELECT rank, count(*) FROM kernels k JOIN runs r USING (run_id) "
            "WHERE r.name = 'ddp_2rank' GROUP BY rank"
        ).fetchall()
    )
    assert {k: v["kernels"] for k, v in counts.items()} == raw == {0: 4, 1: 7}
    assert counts[1]["compiles"] == 2  # compile ids of rank 1 only
    phases = run_named(con, "compile_time_by_phase", {"run_id": "ddp"}).to_pylist()
    assert {r["rank"] for r in phases} == {0, 1}
    for rank in (0, 1):
        assert sum(r["pct"] for r in phases if r["rank"] == rank) == pytest.approx(100, abs=0.2)
    single = run_named(con, "compile_time_by_phase", {"run_id": "recompiles"}).to_pylist()
    assert {r["rank"] for r in single} == {None} and len(single) == 4


def test_figures_combined_over_ranks_say_so(sample_wh):
    con = pt2logs.connect(sample_wh)
    (o,) = run_named(con, "run_overview", {"run_id": "ddp"}).to_pylist()
    per_rank = {
        r["rank"]: r["compiles"]
        for r in run_named(con, "rank_divergence", {"run_id": "ddp"}).to_pylist()
    }
    assert (
        o["ranks"] == 2
        and o["compiles"] == sum(per_rank.values())
        and o["compiles_per_rank_max"] == max(per_rank.values())
    )
    assert 0 < o["compile_s_per_rank_max"] < o["compile_s"]
    from pt2logs.query.queries import load_queries

    for name in (
        "run_overview",
        "cache_hit_rate",
        "compile_time_by_function",
        "top_recompile_causes",
        "dash_week_over_week",
    ):
        q = load_queries()[name]
        assert "every rank" in q.question or "per_rank" in q.question, name

    r = CliRunner().invoke(main, ["summary", "ddp", "-w", sample_wh])
    assert (
        "2 ranks" in r.output
        and "at most 7 compiles" in r.output
        and "add up all 2 ranks" in r.output
    )
    assert "Compile time by function, all 2 ranks added up" in r.output
    r = CliRunner().invoke(main, ["summary", "recompiles", "-w", sample_wh])
    assert "1 rank\n" in r.output and "rank(s)" not in r.output and "per rank" not in r.output
    r = CliRunner().invoke(main, ["diff", "ddp", "recompiles", "-w", sample_wh])
    assert (
        "torch 2.13.0+cpu" in r.output and "add up every rank of a run (A has 2, B 1)" in r.output
    )

    from pt2logs import dashboard as D

    m = {x.label: x for x in D.build(con, run="ddp").headline.metrics}
    assert "2 ranks added up, at most 7 on one" in m["Compiles"].detail and m[
        "Wall time"
    ].detail.startswith("2 ranks")

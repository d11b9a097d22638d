"""Ranks: a one-process run has 1 rank, per-rank results keep `rank`, and figures combined over ranks
say so (in the column name, the query's question or the report's text)."""

from __future__ import annotations

import glob
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

import pt2logs
from pt2logs.cli import main
from pt2logs.queries import run_named


def test_a_run_without_ranks_is_one_process(sample_wh):
    con = pt2logs.connect(sample_wh)
    n = dict(con.execute("SELECT name, n_ranks FROM runs").fetchall())
    assert n == {"compile_failure": 1, "ddp_2rank": 2, "graph_breaks": 1, "recompiles": 1, "train_step": 1}
    # the raw Parquet says so too (not only the view)
    raw = pq.read_table(glob.glob(f"{sample_wh}/runs/**/*.parquet", recursive=True)[0]).to_pylist()
    assert min(r["n_ranks"] for r in raw) == 1
    assert {r["run"]: r["ranks"] for r in run_named(con, "run_overview", {}).to_pylist()}["recompiles"] == 1


def test_an_old_warehouse_with_n_ranks_0_reads_as_1(sample_wh, tmp_path):
    wh = str(tmp_path / "old")
    shutil.copytree(sample_wh, wh)
    (path,) = glob.glob(f"{wh}/runs/**/*.parquet", recursive=True)
    t = pq.read_table(path)
    zeroed = pa.array([0 if len(r) == 0 else n for n, r in zip(t["n_ranks"].to_pylist(), t["ranks"].to_pylist(), strict=True)],
                      t.schema.field("n_ranks").type)
    pq.write_table(t.set_column(t.schema.get_field_index("n_ranks"), "n_ranks", zeroed), path)
    con = pt2logs.connect(wh)
    assert con.execute("SELECT count(*) FROM _runs_all WHERE n_ranks = 0").fetchall()[0][0] == 4  # as written
    assert con.execute("SELECT min(n_ranks) FROM runs").fetchall()[0][0] == 1
    assert {r["name"]: r["n_ranks"] for r in run_named(con, "runs", {}).to_pylist()}["train_step"] == 1
    r = CliRunner().invoke(main, ["summary", "train_step", "-w", wh, "-f", "json"])
    assert r.exit_code == 0 and '"ranks": 1' in r.output

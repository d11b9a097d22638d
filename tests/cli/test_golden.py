"""The analysis commands on the sample warehouse, compared with golden outputs.

Regenerate after an intended change with:  UPDATE_GOLDEN=1 python -m pytest tests/cli/test_golden.py
(then read the diff: it is the change users will see).
"""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner
from tests.conftest import ROOT

import pt2logs
from pt2logs.cli import main

GOLDEN = ROOT / "tests" / "golden"

CASES = {
    "summary_recompiles.txt": ["summary", "recompiles"],
    "summary_ddp.json": ["summary", "ddp", "--format", "json"],
    "diff_recompiles_graph_breaks.txt": ["diff", "recompiles", "graph_breaks"],
    "ranks_ddp.txt": ["ranks", "ddp"],
    "query_top_recompile_causes.md": ["query", "top_recompile_causes", "-f", "markdown"],
    "query_graph_break_hotspots.csv": ["query", "graph_break_hotspots", "-f", "csv"],
    "query_adhoc.json": [
        "query",
        "SELECT cause, count(*) AS n FROM recompiles GROUP BY 1 ORDER BY 2 DESC, 1",
        "-f",
        "json",
    ],
    "query_kernel_counts.txt": ["query", "kernel_counts"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name, sample_wh, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    r = CliRunner().invoke(main, [*CASES[name], "--warehouse", sample_wh], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    out = r.stdout
    if name.endswith(".json"):  # compare data, not whitespace
        out = json.dumps(json.loads(out), indent=1, sort_keys=True) + "\n"
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(out)
    assert path.exists(), f"no golden file {path}: run with UPDATE_GOLDEN=1"
    assert out == path.read_text(), (
        f"{name} changed; if intended, UPDATE_GOLDEN=1 and review the diff"
    )


def test_diff_gate(sample_wh):
    r = CliRunner().invoke(
        main, ["diff", "recompiles", "graph_breaks", "-w", sample_wh, "--fail-on-regression", "10"]
    )
    assert r.exit_code == 1 and "new graph-break site" in r.output
    r = CliRunner().invoke(
        main,
        ["diff", "graph_breaks", "graph_breaks", "-w", sample_wh, "--fail-on-regression", "10"],
    )
    assert r.exit_code == 0


def test_clear_errors(sample_wh, tmp_path):
    cases = [
        (["query", "no_such_query"], "no named query 'no_such_query'"),
        (["query", "SELECT * FROM nowhere"], "nowhere"),
        (["query", "runs", "-p", "bogus", "1"], "takes no parameter 'bogus'"),
        (["summary", "zzzz"], "no run matches 'zzzz'"),
    ]
    for args, msg in cases:
        r = CliRunner().invoke(main, [*args, "-w", sample_wh])
        assert r.exit_code != 0 and msg in r.output, (args, r.output)
    r = CliRunner().invoke(main, ["summary", "-w", str(tmp_path / "none")])
    assert r.exit_code == 2 and "no warehouse at" in r.output


def test_every_output_format(sample_wh, tmp_path):
    from pt2logs.cli.outputs import OUTPUT_FORMATS

    for fmt in OUTPUT_FORMATS:
        out = tmp_path / f"o.{fmt}"
        r = CliRunner().invoke(main, ["query", "runs", "-w", sample_wh, "-f", fmt, "-o", str(out)])
        assert r.exit_code == 0, (fmt, r.output)
        assert out.stat().st_size > 0
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "o.parquet").num_rows == 5


def test_python_api_and_duckdb_file(sample_wh):
    import duckdb

    lf = pt2logs.table("recompiles", sample_wh)
    n = lf.collect().height
    assert (
        n == pt2logs.connect(sample_wh).execute("SELECT count(*) FROM recompiles").fetchone()[0] > 0
    )
    con = duckdb.connect(os.path.join(sample_wh, "pt2logs.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM recompiles").fetchone()[0] == n
    assert (
        con.execute("SELECT count(*) FROM selected_runs('ddp', NULL, NULL, NULL)").fetchone()[0]
        == 1
    )

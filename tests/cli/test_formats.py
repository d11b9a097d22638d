"""One --format option for every read command, its choices from the output-format registry."""

from __future__ import annotations

import json
import re

import click
import pyarrow.parquet as pq
from click.testing import CliRunner

from pt2logs.cli import main
from pt2logs.cli.outputs import OUTPUT_FORMATS, formats_that


def _choices(command: str) -> list[str]:
    cmd = main.get_command(click.Context(main), command)
    opt = next(p for p in cmd.params if p.name == "fmt")
    return list(opt.type.choices)


def test_choices_come_from_the_registry():
    assert _choices("query") == _choices("ranks") == formats_that("rows") == list(OUTPUT_FORMATS)
    assert _choices("summary") == _choices("diff") == formats_that("report")
    assert "parquet" not in formats_that("report") and {"table", "json"} <= set(
        formats_that("report")
    )


def test_summary_and_diff_write_every_report_format(sample_wh):
    for fmt in formats_that("report"):
        for args in (["summary", "recompiles"], ["diff", "recompiles", "graph_breaks"]):
            r = CliRunner().invoke(main, [*args, "-w", sample_wh, "-f", fmt])
            assert r.exit_code == 0, (args, fmt, r.output)
    # `text` was summary's and diff's name for the table format: scripts that say it still work
    assert (
        CliRunner().invoke(main, ["summary", "recompiles", "-w", sample_wh, "-f", "text"]).output
        == CliRunner()
        .invoke(main, ["summary", "recompiles", "-w", sample_wh, "-f", "table"])
        .output
    )
    r = CliRunner().invoke(main, ["summary", "recompiles", "-w", sample_wh, "-f", "parquet"])
    assert r.exit_code == 2 and "'parquet' is not one of" in r.output


def test_ranks_writes_every_row_format(sample_wh, tmp_path):
    for fmt in OUTPUT_FORMATS:
        out = tmp_path / f"ranks.{fmt}"
        r = CliRunner().invoke(main, ["ranks", "ddp", "-w", sample_wh, "-f", fmt, "-o", str(out)])
        assert r.exit_code == 0, (fmt, r.output)
        assert out.stat().st_size > 0
    assert pq.read_table(tmp_path / "ranks.parquet").num_rows == 2
    # a single-rank run is an empty result for machines, a sentence for people
    r = CliRunner().invoke(main, ["ranks", "recompiles", "-w", sample_wh, "-f", "json"])
    assert r.exit_code == 0 and json.loads(r.output) == []
    r = CliRunner().invoke(main, ["ranks", "recompiles", "-w", sample_wh])
    assert "has a single rank: nothing to compare" in r.output


def test_the_table_format_lays_out_at_most_table_rows_and_counts_the_rest(sample_wh):
    """A fleet's result (100,000s of rows) in the terminal table took minutes and gigabytes: the table
    shows the first TABLE_ROWS rows and its last line counts the others; csv still gives every row."""
    from pt2logs.cli.outputs import TABLE_ROWS

    n = TABLE_ROWS * 5
    sql = f"SELECT range AS i, 'run ' || range AS what FROM range({n})"
    r = CliRunner().invoke(main, ["query", sql, "-w", sample_wh])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert (
        f"{n} rows (the first {TABLE_ROWS:,} shown; {n - TABLE_ROWS:,} more rows not shown"
        in r.output
    )
    assert re.search(rf"\brun {TABLE_ROWS - 1}\b", r.output) and not re.search(
        rf"\brun {TABLE_ROWS}\b", r.output
    )
    assert len(lines) < TABLE_ROWS + 20
    r = CliRunner().invoke(main, ["query", sql, "-w", sample_wh, "-f", "csv"])
    assert r.exit_code == 0 and len(r.output.splitlines()) == n + 1
    small = CliRunner().invoke(main, ["query", "SELECT 1 AS x", "-w", sample_wh]).output
    assert "1 row" in small and "not shown" not in small

"""`pt2logs query` streams its result into every format (issue 31 item 7): peak memory does not grow with
the result's rows, and the bytes are those the formats wrote for the whole result at once."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pt2logs.cli import main
from pt2logs.cli.outputs import OUTPUT_FORMATS, PARQUET_BATCH
from pt2logs.query.queries import QueryError, run_sql
from pt2logs.query.views import connect

ROOT = Path(__file__).resolve().parents[2]

#: 150 MB of text in 30,000 rows: what the text formats held whole before (0.6-1.1 GB peak), and a
#: result that costs DuckDB nothing to make
WIDE = "SELECT i, repeat('x', 5000) || i::VARCHAR AS s FROM range(30000) t(i)"
#: 4,000,000 rows (440 MB as Arrow): parquet holds a row group (1,048,576 rows) at a time, as
#: pq.write_table writes them; before it held the whole result (1.1 GB peak)
LONG = "SELECT i, repeat('y', 100) || i::VARCHAR AS s FROM range(4000000) t(i)"
#: peak RSS of the whole process (Python, DuckDB, pyarrow: ~180 MB) that streaming stays under
BOUND_MB = {"csv": 320, "ndjson": 320, "json": 320, "table": 320, "parquet": 700}


#: runs argv[1:] and prints its peak RSS in KiB. A small process between: a child started from this
#: (big) one by vfork inherits this one's peak RSS across exec (Linux keeps it in ru_maxrss)
MEASURE = """import os, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL)
_, status, usage = os.wait4(p.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)"""


def _peak_mb(warehouse: str, sql: str, fmt: str, out: Path) -> float:
    """Peak RSS of `pt2logs query SQL -f FMT -o OUT` in a process of its own (wait4: its own alone)."""
    pythonpath = str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")
    args = [
        sys.executable,
        "-m",
        "pt2logs",
        "query",
        sql,
        "-w",
        warehouse,
        "-f",
        fmt,
        "-o",
        str(out),
    ]
    r = subprocess.run(
        [sys.executable, "-c", MEASURE, *args],
        env=dict(os.environ, PYTHONPATH=pythonpath),
        capture_output=True,
        text=True,
        check=True,
    )
    code, kib = r.stdout.split()
    assert code == "0", r.stderr
    return int(kib) / 1024


@pytest.mark.parametrize("fmt", list(BOUND_MB))
def test_peak_memory_does_not_grow_with_the_result(sample_wh, tmp_path, fmt):
    sql, rows = (LONG, 4_000_000) if fmt == "parquet" else (WIDE, 30_000)
    out = tmp_path / f"out.{fmt}"
    peak = _peak_mb(sample_wh, sql, fmt, out)
    assert peak < BOUND_MB[fmt], f"{fmt}: {peak:.0f} MB peak for {out.stat().st_size:,} bytes"
    if fmt == "parquet":
        assert pq.ParquetFile(out).metadata.num_rows == rows
    elif fmt == "table":
        assert f"{rows} rows (the first 1,000 shown; 29,000 more" in out.read_text()
    else:  # every row written: a line each (json: its array's "{" lines)
        text = out.read_bytes()
        assert text.count(b"\n") == {"csv": rows + 1, "ndjson": rows, "json": 4 * rows + 2}[fmt]


#: rows of every kind the formats meet (NULLs, lists, timestamps, text that needs quoting), 3 batches
MIXED = """SELECT r.run_id, r.formats, r.started_at, i, i * 0.25 AS quarter,
    CASE WHEN i % 7 = 0 THEN NULL ELSE 'a "quoted", | piped' || chr(10) || i::VARCHAR END AS note
FROM runs r, range(1000) t(i) ORDER BY r.run_id, i"""


def _whole(sample_wh: str, sql: str):
    con = connect(sample_wh)
    try:
        return run_sql(con, sql)
    finally:
        con.close()


@pytest.mark.parametrize(
    "sql",
    [MIXED, MIXED + " LIMIT 0", "SELECT i FROM range(1200000) t(i)"],
    ids=["mixed", "empty", "long"],
)
def test_streamed_bytes_are_those_of_the_whole_result(sample_wh, tmp_path, sql):
    whole = _whole(sample_wh, sql)
    assert whole.num_rows in (0, 5000, 1_200_000)
    # the writers as they were before streaming: the whole result at once
    small = whole.num_rows <= 100_000
    before = {
        "json": small
        and orjson.dumps(
            whole.to_pylist(), default=str, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
        )
        + b"\n",
        "ndjson": small
        and b"".join(
            orjson.dumps(r, default=str, option=orjson.OPT_NON_STR_KEYS) + b"\n"
            for r in whole.to_pylist()
        ),
    }
    buf = io.BytesIO()
    # (Parquet's pages follow the table's chunks: DuckDB's, of PARQUET_BATCH rows with several threads, of
    # 131,072 with one; the writer's batches are PARQUET_BATCH rows whatever the threads)
    batches = whole.combine_chunks().to_batches(max_chunksize=PARQUET_BATCH)
    pq.write_table(pa.Table.from_batches(batches, whole.schema), buf, compression="zstd")
    before["parquet"] = buf.getvalue()
    for fmt in ("csv", "markdown", "table") if small else ("table",):  # the whole Table at once
        buf = io.BytesIO()
        OUTPUT_FORMATS[fmt](whole.combine_chunks(), buf)
        before[fmt] = buf.getvalue()
    for fmt in OUTPUT_FORMATS:
        if fmt not in ("parquet", "table") and whole.num_rows > 100_000:
            continue  # (a row group and a half, for parquet; slow in Python for the others)
        out = tmp_path / f"out.{fmt}"
        r = CliRunner().invoke(main, ["query", sql, "-w", sample_wh, "-f", fmt, "-o", str(out)])
        assert r.exit_code == 0, r.output
        assert out.read_bytes() == before[fmt], fmt
        assert f"wrote {whole.num_rows} rows" in r.output


def test_an_error_after_the_first_rows_is_a_clear_error(sample_wh, tmp_path):
    """A query that fails part way (a cast at row 5,000) says why, with status 1, and no traceback."""
    sql = "SELECT CASE WHEN i < 5000 THEN i::VARCHAR ELSE 'x' END::INTEGER AS n FROM range(10000) t(i)"
    with pytest.raises(QueryError, match="Conversion"):
        _whole(sample_wh, sql)
    r = CliRunner().invoke(
        main, ["query", sql, "-w", sample_wh, "-f", "csv", "-o", str(tmp_path / "o")]
    )
    assert r.exit_code == 1 and "Conversion" in r.output and "Traceback" not in r.output, r.output


@pytest.mark.parametrize("fmt", ["csv", "ndjson", "json"])
def test_a_reader_that_stops_early_ends_the_command_quietly(sample_wh, fmt):
    """`pt2logs query ... | head`: once the reader closes the pipe the command ends with status 1 and says
    nothing (before, CSV and JSON said "Error: BrokenPipeError ..." and pointed at PT2LOGS_DEBUG)."""
    pythonpath = str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")
    p = subprocess.Popen(
        [sys.executable, "-m", "pt2logs", "query", WIDE, "-w", sample_wh, "-f", fmt],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=pythonpath),
    )
    assert p.stdout is not None and p.stderr is not None
    first = p.stdout.readline()  # (150 MB follow it: far more than the pipe holds)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 1, err
    assert first.strip() and err == ""

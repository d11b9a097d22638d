"""Warehouses written before the identity columns (schema v1 of runs, compilation_metrics, recompiles,
graph_breaks, failures) still answer every identity-keyed query, from their raw values."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tests.conftest import SAMPLES
from tests.old_warehouse import without_frame_ids, without_records

import pt2logs
import pt2logs.tables  # noqa: F401  (registers the tables)
from pt2logs.query import kept_rows
from pt2logs.query.queries import load_queries, run_named
from pt2logs.tables.schema import TABLES

#: the columns each table gained with the identities (v2): a v1 file has none of them
V2_COLUMNS = {
    "runs": {"python_version", "cwd", "user_root"},
    "compilation_metrics": {"co_file", "co_file_kind"},
    "recompiles": {
        "co_file",
        "co_file_kind",
        "guard_kind",
        "guard_source",
        "guard_expected",
        "guard_actual",
    },
    "graph_breaks": {
        "break_key",
        "frame_file",
        "frame_line",
        "frame_func",
        "lib_file",
        "lib_func",
        "lib_line",
        "user_stack",
        "co_file",
        "co_file_kind",
    },
    "failures": {
        "exc_type",
        "exc_message",
        "failure_key",
        "frame_file",
        "frame_line",
        "frame_func",
        "stack",
        "co_file",
        "co_file_kind",
    },
}


def _as_v1(wh: Path) -> int:
    """Rewrite the warehouse's files of the v2 tables as v1 wrote them: without the new columns (nor the frame
    ids, which came later)."""
    without_frame_ids(wh)
    n = 0
    for table, cols in V2_COLUMNS.items():
        for f in (wh / table).rglob("*.parquet"):
            t = pq.read_table(f, partitioning=None)
            meta = dict(t.schema.metadata or {}) | {b"pt2logs.schema_version": b"1"}
            t = t.drop_columns([c for c in cols if c in t.column_names]).replace_schema_metadata(
                meta
            )
            pq.write_table(t, f)
            n += 1
    without_records(wh)  # v1 wrote no commit records
    for kind in kept_rows.KINDS:  # nor rows kept per commit (made from the files as they were: v2)
        shutil.rmtree(wh / kind.folder, ignore_errors=True)
    return n


def test_the_declared_v2_columns_are_these() -> None:
    for table, cols in V2_COLUMNS.items():
        assert TABLES[table].version >= 2 and cols <= set(TABLES[table].names), (
            table
        )  # runs v3: torch_version_from


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ddp_2rank and graph_breaks as v1 files, then compile_failure ingested by this version."""
    wh = tmp_path_factory.mktemp("upgrade") / "wh"
    pt2logs.ingest([str(SAMPLES / "ddp_2rank"), str(SAMPLES / "graph_breaks")], str(wh))
    assert _as_v1(wh) >= 5
    pt2logs.ingest([str(SAMPLES / "compile_failure")], str(wh))
    return wh


def test_v1_rows_fall_back_to_raw_values(mixed: Path) -> None:
    con = pt2logs.connect(str(mixed))
    assert con.execute(
        "SELECT count(*) FROM graph_breaks WHERE break_key IS NOT NULL"
    ).fetchall() == [(0,)]
    rows = run_named(con, "graph_break_hotspots", {"run_id": "ddp_2rank"}).to_pylist()
    # v1 rows keep the location they had: torch's "user code at" (here inside contextlib.py)
    assert {r["location"] for r in rows} == {
        "/root/.pyenv/versions/3.11.7/lib/python3.11/contextlib.py:105",
        "/work/main/.venv/lib/python3.11/site-packages/torch/nn/parallel/distributed.py:1757",
    }
    assert {r["break_key"] for r in rows} == {"gb0007", "gb0156"}
    fn = run_named(con, "compile_time_by_function", {"run_id": "graph_breaks"}).to_pylist()
    assert all(r["file"] == "/work/main/sample_traces/generate.py" for r in fn)
    restarts = run_named(con, "failures_and_restarts", {"run_id": "ddp_2rank"}).to_pylist()
    assert {r["failure_key"] for r in restarts} == {
        "Attempted to call function marked as skipped",
        "Unsupported method call",
    }


def test_v2_rows_beside_v1_rows_have_their_identities(mixed: Path) -> None:
    con = pt2logs.connect(str(mixed))
    (f,) = run_named(con, "dash_top_failures", {"run_id": "compile_failure"}).to_pylist()
    assert f["fail_type"] == "BackendCompilerFailed" and f["location"] == "generate.py:228"
    assert f["reason"].startswith(
        "backend='bad_backend' raised: RuntimeError: synthetic backend failure"
    )
    roots = dict(con.execute("SELECT name, user_root FROM runs").fetchall())
    assert roots == {
        "ddp_2rank": None,
        "graph_breaks": None,
        "compile_failure": "/work/main/sample_traces/",
    }


@pytest.mark.parametrize("name", sorted(load_queries()))
def test_every_query_runs_on_a_mixed_warehouse(mixed: Path, name: str) -> None:
    con = pt2logs.connect(str(mixed))
    run_named(con, name, {})


def test_every_query_answers_the_same_after_compact(
    mixed: Path, tmp_path: pytest.TempPathFactory
) -> None:
    """`pt2logs compact` rewrites the v1 files (their frame ids filled, the identity columns NULL as read):
    every query answers as before."""
    import shutil

    from pt2logs.store.compact import compact

    def answers(wh: Path) -> dict[str, list]:
        con = pt2logs.connect(str(wh))
        out = {}
        for name, q in sorted(load_queries().items()):
            until = {"until": "2030-01-01"} if "until" in {p.name for p in q.params} else {}
            out[name] = run_named(con, name, until).to_pylist()
        con.close()
        return out

    wh = tmp_path / "wh"
    shutil.copytree(mixed, wh)
    # (rows kept at ingest were decided from the files before _as_v1 rewrote them: a v1 warehouse had none)
    for kept in ("_outcomes", "_advice"):
        shutil.rmtree(wh / kept, ignore_errors=True)  # (none where the suite keeps none)
    before = answers(wh)
    assert compact(str(wh), grace_s=0).frames_upgraded > 0
    assert answers(wh) == before

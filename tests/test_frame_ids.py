"""frame_id / frame_compile_id: the integers of a compile id ([!A/]F/C), stored in every row of the compile
tables at ingest (readers/identity_cols.py) so SQL never parses the text; files written before the columns
have them filled by the same rule in Python (pt2logs' connections: query/frame_fill.py) until `pt2logs compact`
rewrites them with the columns (store/frame_upgrade.py), so an older warehouse answers the same
(tests/test_structure.py: no SQL parses a compile id)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tests.old_warehouse import without_frame_ids

import pt2logs
from pt2logs.query.queries import run_named
from pt2logs.readers.identity_cols import frame_ids
from pt2logs.tables.compile import FRAME_ID_TABLES
from pt2logs.tables.schema import TABLES

FRAME_COLUMNS = ("frame_id", "frame_compile_id")


def test_the_rule() -> None:
    assert frame_ids("0/1") == (0, 1) and frame_ids("12/3") == (12, 3)
    assert frame_ids("!0/4/2") == (4, 2)  # compiled autograd: its frame inside
    for no in (None, "", "!1", "0/1_2", "x/1", "0/1\n", "1/1234567890"):
        assert frame_ids(no) == (None, None), no


def test_a_compile_ids_lane_is_its_frame() -> None:
    """The Perfetto export's lane: the compile id without its compile number (compiled autograd kept)."""
    from pt2logs.analysis.identity import compile_lane

    cases = {
        "0/3": "0",
        "12/0": "12",
        "!1/0/2": "!1/0",
        "!1": "!1",
        "": None,
        None: None,
        "x/1": None,
    }
    assert {c: compile_lane(c) for c in cases} == cases


def test_declared_in_the_compile_tables() -> None:
    for name in FRAME_ID_TABLES:
        t = TABLES[name]
        assert set(FRAME_COLUMNS) <= set(t.names) and "compile_id" in t.names and t.version >= 3, (
            name
        )


def test_every_row_stores_its_compile_ids_integers(sample_wh: str) -> None:
    con = pt2logs.connect(sample_wh)
    for name in FRAME_ID_TABLES:
        rows = con.execute(
            f"SELECT compile_id, frame_id, frame_compile_id FROM {name}_all_sources"
            if "source" in TABLES[name].names
            else f"SELECT compile_id, frame_id, frame_compile_id FROM {name}"
        ).fetchall()
        assert rows, name
        assert all((f, c) == frame_ids(cid) for cid, f, c in rows), name
        assert any(f is not None for _, f, _ in rows), name


@pytest.fixture(scope="module")
def old_wh(sample_wh: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    wh = tmp_path_factory.mktemp("before_frame_ids") / "wh"
    shutil.copytree(sample_wh, wh)
    without_frame_ids(wh)
    return wh


def test_an_older_warehouse_reads_them_from_the_compile_id(sample_wh: str, old_wh: Path) -> None:
    new, old = pt2logs.connect(sample_wh), pt2logs.connect(str(old_wh))
    assert not any(
        "frame_id" in pq.read_schema(f).names for f in (old_wh / "recompiles").rglob("*.parquet")
    )
    for name in FRAME_ID_TABLES:
        sql = f"SELECT compile_id, frame_id, frame_compile_id, line_no FROM {name} ORDER BY ALL"
        assert old.execute(sql).fetchall() == new.execute(sql).fetchall(), name
    for q in ("advice", "bug_report_compiles", "cache_misses", "cache_key_diff"):
        assert run_named(old, q, {}).to_pylist() == run_named(new, q, {}).to_pylist(), q

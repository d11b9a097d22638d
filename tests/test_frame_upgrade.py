"""A warehouse written before frame_id / frame_compile_id (schema v2 of the frame tables): pt2logs' reads fill the
integers by the Python rule (query/frame_fill.py), `pt2logs compact` rewrites the files with them
(store/frame_upgrade.py) as a transaction (killed anywhere: nothing lost), `pt2logs check` names what is left
to upgrade; locally and on S3."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tests.old_warehouse import without_frame_ids

import pt2logs
from pt2logs.query.queries import load_queries, run_named
from pt2logs.query.views import snapshot_of
from pt2logs.store.compact import compact
from pt2logs.store.repair import check
from pt2logs.tables import TABLES
from pt2logs.tables.compile import FRAME_ID_TABLES

COLUMNS = ["run_id", "source", "file", "line_no", "compile_id", "frame_id", "frame_compile_id"]
#: a fixed end for the queries that default to now (dash_week_over_week's windows)
PARAMS = {"until": "2030-01-01"}
#: the queries asked on S3 (every one locally): those that join or count by frame
ON_S3 = (
    "advice",
    "bug_report_compiles",
    "cache_misses",
    "cache_key_diff",
    "dash_run_recompile_chain",
)


def _answers(wh: str, names: tuple[str, ...] | None = None) -> dict[str, list]:
    con = pt2logs.connect(wh)
    out = {}
    for name, q in sorted(load_queries().items()):
        if names is not None and name not in names:
            continue
        params = {k: v for k, v in PARAMS.items() if k in {p.name for p in q.params}}
        out[name] = run_named(con, name, params).to_pylist()
    con.close()
    return out


def _stored(wh: str | Path, fs=None) -> dict[str, list]:
    """The frame tables' rows as their Parquet files hold them (no view, no rule applied), sorted."""
    out = {}
    for table in FRAME_ID_TABLES:
        cols = [c for c in COLUMNS if c in TABLES[table].names]
        if fs is None:
            paths = sorted(Path(wh, table).rglob("*.parquet"))
            files = [pq.read_table(p, columns=cols, partitioning=None) for p in paths]
        else:
            paths = sorted(fs.glob(f"{wh}/{table}/**/*.parquet"))
            files = []
            for p in paths:
                with fs.open(p, "rb") as f:
                    files.append(pq.read_table(f, columns=cols, partitioning=None))
        out[table] = sorted((tuple(r.values()) for t in files for r in t.to_pylist()), key=repr)
    return out


@pytest.fixture(scope="module")
def new(sample_wh: str) -> tuple[str, dict]:
    return sample_wh, _answers(sample_wh)


@pytest.fixture(scope="module")
def old(sample_wh: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The sample warehouse as pt2logs wrote it before the columns."""
    wh = tmp_path_factory.mktemp("old_frames") / "wh"
    shutil.copytree(sample_wh, wh)
    without_frame_ids(wh)
    return str(wh)


def test_an_old_warehouse_answers_every_query_as_a_new_one_before_and_after_compact(
    new: tuple[str, dict], old: str, tmp_path: Path
) -> None:
    wh = str(tmp_path / "wh")
    shutil.copytree(old, wh)
    con = pt2logs.connect(wh)
    assert {t for t in FRAME_ID_TABLES if not snapshot_of(con).complete[t]} == set(FRAME_ID_TABLES)
    con.close()
    assert _answers(wh) == new[1]  # filled by the Python rule on pt2logs' connection
    res = compact(wh, grace_s=0)
    assert res.partitions and res.rows_dropped == 0 and res.frames_upgraded == len(FRAME_ID_TABLES)
    assert _answers(wh) == new[1]  # read from the stored columns
    # the files hold the columns, with what a fresh ingest writes; the views read them as stored
    assert _stored(wh) == _stored(new[0])
    con = pt2logs.connect(wh)
    assert all(snapshot_of(con).complete[t] for t in FRAME_ID_TABLES)
    con.close()
    assert compact(wh).partitions == []  # upgraded once


@pytest.mark.kept_rows
def test_rows_kept_from_files_not_upgraded_are_a_new_warehouses(
    new: tuple[str, dict], old: str, tmp_path: Path
) -> None:
    """The kept cache's own connection (outcomes, advice items decided once per transaction) fills them too."""
    from pt2logs.query.kept_cache import keep

    wh = tmp_path / "wh"
    shutil.copytree(old, wh)
    for kept in ("_outcomes", "_advice"):
        shutil.rmtree(wh / kept, ignore_errors=True)  # (none where the suite keeps none)
    got = keep(str(wh))
    assert got.runs == got.advice_runs == len(new[1]["runs"]) > 0
    assert _answers(str(wh)) == new[1]


def test_check_names_the_files_to_upgrade_and_how(old: str, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from pt2logs.cli import main

    wh = str(tmp_path / "wh")
    shutil.copytree(old, wh)
    before = check(wh)
    assert before.ok and {f.split("/", 1)[0] for f in before.without_frame_ids} == set(
        FRAME_ID_TABLES
    )
    out = CliRunner().invoke(main, ["check", "-w", wh])
    assert out.exit_code == 0, out.output
    assert f"{len(before.without_frame_ids)} file(s) written before frame_id" in out.output
    assert f"pt2logs compact -w {wh}" in out.output
    out = CliRunner().invoke(main, ["compact", "-w", wh])
    assert out.exit_code == 0, out.output
    assert f"{len(before.without_frame_ids)} file(s) written before frame_id" in out.output
    assert check(wh).without_frame_ids == []
    out = CliRunner().invoke(main, ["check", "-w", wh])
    assert out.exit_code == 0 and "frame_id" not in out.output, out.output


@pytest.mark.views_file
def test_the_views_file_reads_the_stored_columns(old: str, tmp_path: Path) -> None:
    """The DuckDB CLI cannot call Python: its views show NULL for a file not upgraded, the integers after."""
    import duckdb

    from pt2logs.ingestion.views_file import ViewsFile
    from pt2logs.store.warehouse import Warehouse

    wh = str(tmp_path / "wh")
    shutil.copytree(old, wh)
    sql = "SELECT count(*), count(frame_id) FROM recompiles"
    for upgraded in (False, True):
        path = ViewsFile(Warehouse(wh)).write()
        con = duckdb.connect(path, read_only=True)
        n, filled = con.execute(sql).fetchone()
        con.close()
        assert n > 0 and filled == (n if upgraded else 0)
        compact(wh, grace_s=0)


@pytest.mark.parametrize("step", ["compact.data", "compact.commit"])
def test_an_upgrade_killed_midway_loses_nothing(
    new: tuple[str, dict], old: str, tmp_path: Path, step: str
) -> None:
    """Killed before its commit, the old files stay live (and are filled when read); after, the new ones."""
    from tests.test_crash_safety import _cli, _leftovers

    wh = str(tmp_path / "wh")
    shutil.copytree(old, wh)
    p = _cli("compact", "-w", wh, PT2LOGS_DIE_AFTER=step, PT2LOGS_GC_GRACE_S="0")
    assert p.returncode == 137, p.stdout + p.stderr
    assert _answers(wh) == new[1]
    compact(wh, grace_s=0)  # recovers, then upgrades what is left
    assert _answers(wh) == new[1] and _stored(wh) == _stored(new[0])
    assert _leftovers(wh) == []


def test_an_upgrade_on_s3(new: tuple[str, dict], old: str) -> None:
    from tests.s3server import moto_s3

    expected = {q: new[1][q] for q in ON_S3}
    with moto_s3() as fs:
        fs.mkdir("frames")
        fs.put(old, "frames/wh", recursive=True)
        # (the local warehouse's flock file: on S3 a lock held, broken only after a lease)
        fs.rm("frames/wh/_lock")
        wh = "s3://frames/wh"
        assert len(check(wh).without_frame_ids) >= len(FRAME_ID_TABLES)
        assert _answers(wh, ON_S3) == expected
        assert compact(wh, grace_s=0).partitions
        assert check(wh).without_frame_ids == []
        assert _answers(wh, ON_S3) == expected
        assert _stored("frames/wh", fs) == _stored(new[0])

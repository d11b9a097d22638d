"""Fleet scale: an S3 warehouse on a real S3-compatible server, compaction, partition pruning, Ray."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.conftest import SAMPLES, fixture_path, tables_rows
from tests.old_warehouse import rerecord
from tests.s3server import moto_s3

import pt2logs
from pt2logs.cli import main

SECRET = "s3cr3t-value-never-logged"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A moto S3 server on loopback, with credentials in the usual environment variables."""
    with moto_s3(SECRET) as fs:
        fs.mkdir("fleet")
        fs.put(
            str(fixture_path("tlparse", "multi_rank_logs")),
            "fleet/traces/multi_rank_logs",
            recursive=True,
        )
        fs.put(str(SAMPLES / "train_step"), "fleet/traces/train_step", recursive=True)
        yield fs


def _drop_paths(rows: list[tuple]) -> list[tuple]:
    return sorted(
        (
            tuple(v for v in r if not (isinstance(v, str) and ("s3://" in v or v.startswith("/"))))
            for r in rows
        ),
        key=repr,
    )


def test_s3_in_and_out_equals_local(s3, tmp_path, caplog, capfd):
    res = pt2logs.ingest(["s3://fleet/traces/"], "s3://fleet/wh/")
    assert res.runs_new == 2 and res.errors == 0
    local = str(tmp_path / "local")
    pt2logs.ingest(
        [str(fixture_path("tlparse", "multi_rank_logs")), str(SAMPLES / "train_step")], local
    )
    # every table over one connection per warehouse (a connection to S3 lists it: a LIST per table)
    drops = dict.fromkeys(
        (
            "events",
            "compilation_metrics",
            "recompiles",
            "kernels",
            "compile_phases",
            "cache_events",
        ),
        ("txn", "ingest_date"),
    )
    on_s3, here = tables_rows("s3://fleet/wh/", drops), tables_rows(local, drops)
    for table in drops:
        assert _drop_paths(on_s3[table]) == _drop_paths(here[table]), table
    assert s3.exists("fleet/wh/_meta.json") and s3.glob("fleet/wh/events/ingest_date=*/*.parquet")
    # incremental on S3 too: nothing changed, nothing written
    again = pt2logs.ingest(["s3://fleet/traces/"], "s3://fleet/wh/")
    assert again.runs_unchanged == 2 and again.runs_new == 0
    # queries and reports read it from there
    r = CliRunner().invoke(
        main, ["summary", "multi_rank", "-w", "s3://fleet/wh/"], catch_exceptions=False
    )
    assert r.exit_code == 0 and "multi_rank_logs" in r.output
    r = CliRunner().invoke(
        main, ["query", "SELECT count(*) AS n FROM runs", "-w", "s3://fleet/wh/", "-f", "csv"]
    )
    assert r.output.strip().splitlines()[-1] == "2"
    out, err = capfd.readouterr()
    assert SECRET not in out + err + caplog.text + r.output


def test_s3_objects_are_compared_by_etag_too(s3, tmp_path):
    """An object rewritten with the same size is read again even when its LastModified (1 s
    resolution) did not move: the ETag the listing gives is recorded and compared."""
    from pt2logs.ingestion.committed import committed_state
    from pt2logs.inputs.discover import discover
    from pt2logs.store.warehouse import Warehouse

    src = fixture_path("tlparse", "simple.log")
    key = "fleet/etag/job/simple.log"
    s3.put(str(src), key)
    wh = str(tmp_path / "wh")
    assert pt2logs.ingest(["s3://fleet/etag/job/"], wh).runs_new == 1
    con = pt2logs.connect(wh)
    ((token,),) = con.execute("SELECT change_token FROM files").fetchall()
    con.close()
    s3.invalidate_cache()
    assert token == "etag:" + s3.info(key)["ETag"].strip('"')
    data = src.read_bytes()
    i = data.index(b'"co_name": "forward"')
    s3.pipe(key, data[:i] + b'"co_name": "fOrward"' + data[i + 20 :])
    s3.invalidate_cache()
    info = s3.info(key)
    assert info["size"] == len(data) and "etag:" + info["ETag"].strip('"') != token
    # the warehouse's answer as if the store's LastModified had not moved: only the ETag differs
    known, _ = committed_state(Warehouse(wh))
    (url,) = known
    known[url] = known[url][:1] + (info["LastModified"].timestamp(),) + known[url][2:]
    (plan,) = discover(["s3://fleet/etag/job/"], known=known).runs
    assert plan.files[0].known_run is None and plan.files[0].head  # opened, not taken as unchanged
    res = pt2logs.ingest(["s3://fleet/etag/job/"], wh)
    assert res.runs_updated == 1
    con = pt2logs.connect(wh)
    assert con.execute("SELECT DISTINCT co_name FROM compilation_metrics").fetchall() == [
        ("fOrward",)
    ]
    con.close()
    assert pt2logs.ingest(["s3://fleet/etag/job/"], wh).runs_unchanged == 1


def test_compact_merges_files_and_drops_dead_rows(tmp_path, monkeypatch):
    import duckdb
    import polars as pl
    import pyarrow.dataset as ds

    from pt2logs.store.compact import compact

    # no reader to protect here: the replaced files go at once instead of after the grace period
    monkeypatch.setenv("PT2LOGS_GC_GRACE_S", "0")

    wh = str(tmp_path / "wh")
    src = fixture_path("tlparse")
    pt2logs.ingest([str(src / "simple.log")], wh)
    pt2logs.ingest([str(src / "comp_failure.log")], wh)
    pt2logs.ingest([str(src / "simple.log")], wh, force=True)  # a superseded copy of a run
    drops = dict.fromkeys(
        ("events", "runs", "compile_phases"), ("txn", "ingest_date", "committed_at")
    )
    before = tables_rows(wh, drops)
    n_files = len(list(Path(wh).rglob("*.parquet")))
    res = compact(wh)
    assert res.rows_dropped > 0 and res.files_after < n_files
    after = tables_rows(wh, drops)
    assert after == before
    # other engines now read the right rows without the live-transaction rule
    n = len(after["events"])
    assert ds.dataset(f"{wh}/events", format="parquet", partitioning="hive").count_rows() == n
    assert pl.scan_parquet(f"{wh}/events/**/*.parquet").select(pl.len()).collect().item() == n
    assert (
        duckdb.sql(f"SELECT count(*) FROM read_parquet('{wh}/events/**/*.parquet')").fetchall()[0][
            0
        ]
        == n
    )
    assert compact(wh).partitions == []  # nothing left to do


def test_compact_while_ingesting_keeps_every_run_once(tmp_path):
    from pt2logs.store.compact import compact

    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(fixture_path("tlparse", "simple.log"))], wh)
    errors = []

    def ingest_more() -> None:
        try:
            pt2logs.ingest([str(fixture_path("gpu"))], wh)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    t = threading.Thread(target=ingest_more)
    t.start()
    for _ in range(3):
        compact(wh, min_files=1)
    t.join()
    assert not errors
    con = pt2logs.connect(wh)
    rows = con.execute(
        "SELECT run_id, count(*) FROM runs GROUP BY 1 HAVING count(*) > 1"
    ).fetchall()
    assert rows == []
    whole = con.execute("""SELECT f.run_id, f.relpath, f.n_events,
                                  (SELECT count(*) FROM events e WHERE e.run_id = f.run_id AND e.file = f.relpath)
                           FROM files f WHERE f.format = 'torch_trace'""").fetchall()
    assert whole and all(n == got for _, _, n, got in whole), whole


def test_since_prunes_partitions(tmp_path):
    wh = Path(tmp_path / "wh")
    pt2logs.ingest([str(SAMPLES / "recompiles")], str(wh))
    # move the partition to an old ingest date, as if it had been ingested long ago
    for table_dir in wh.iterdir():
        for part in table_dir.glob("ingest_date=*"):
            part.rename(table_dir / "ingest_date=2020-01-01")
    rerecord(wh)  # its commit lists the files there
    con = pt2logs.connect(str(wh))
    since = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    plan = con.execute(
        "EXPLAIN ANALYZE SELECT count(*) FROM compile_phases WHERE since_partition(ingest_date, $s)",
        {"s": since},
    ).fetchall()[0][1]
    assert "Scanning Files: 0/1" in plan
    assert con.execute("SELECT count(*) FROM compile_phases").fetchone()[0] > 0


@pytest.mark.slow
def test_ray_engine_equals_local_engine(tmp_path):
    pytest.importorskip("ray")
    from pt2logs.ingestion.engines import make_engine

    inputs = [str(fixture_path("tlparse", "multi_rank_runtime")), str(SAMPLES)]
    local = str(tmp_path / "local")
    pt2logs.ingest(inputs, local, engine=make_engine(1))
    rayed = str(tmp_path / "ray")
    eng = make_engine(2, "ray")
    res = pt2logs.ingest(inputs, rayed, engine=eng)
    assert res.runs_new == 6
    from pt2logs.tables.schema import TABLES

    drops = dict.fromkeys(TABLES, ("txn", "ingest_date", "ingested_at", "committed_at"))
    got, want = tables_rows(rayed, drops), tables_rows(local, drops)  # one connection each
    for table in TABLES:
        assert got[table] == want[table], table

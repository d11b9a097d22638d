"""Warehouse guarantees: idempotent, grows without duplicates, atomic under SIGKILL, safe under concurrency."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.conftest import fixture_path, gpu_trace_head, half_record, settled, tables_rows

import pt2logs
from pt2logs.query.views import arrow_table
from pt2logs.store.parts import txn_of
from pt2logs.tables.schema import TABLES

ALL_TABLES = sorted(TABLES)
RUN_DROP = ("txn", "ingest_date", "ingested_at", "committed_at")


def snapshot(wh: str) -> dict[str, list]:
    return tables_rows(
        wh, {t: RUN_DROP if t == "runs" else ("txn", "ingest_date") for t in ALL_TABLES}
    )


def make_corpus(dest: Path, copies: int) -> Path:
    """Distinct runs built from the real GPU traces: each copy gets its own thread id in line 1."""
    src = sorted(fixture_path("gpu").glob("*/trace/*.log"))
    for i in range(copies):
        s = src[i % len(src)]
        d = dest / f"job{i:03d}"
        d.mkdir(parents=True)
        data = s.read_bytes()
        first, rest = data.split(b"\n", 1)
        parts = first.split(b" ")
        parts[2] = str(100000 + i).encode()
        (d / f"dedicated_log_torch_trace_{i}.log").write_bytes(b" ".join(parts) + b"\n" + rest)
    return dest


def test_reingest_adds_nothing(tmp_path, wh):
    src = fixture_path("gpu", "train_loop")
    pt2logs.ingest([str(src)], wh)
    before = snapshot(wh)
    res = pt2logs.ingest([str(src)], wh)
    assert res.runs_unchanged == 1 and res.runs_new == res.runs_updated == 0 and res.events == 0
    assert snapshot(wh) == before
    # parquet files: nothing new was written either
    n_files = sum(1 for _ in Path(wh).rglob("*.parquet"))
    pt2logs.ingest([str(src)], wh)
    assert sum(1 for _ in Path(wh).rglob("*.parquet")) == n_files


def test_a_growing_file_is_reingested_without_duplicates(tmp_path):
    full = gpu_trace_head()
    log = tmp_path / "job" / "dedicated_log_torch_trace_x.log"
    log.parent.mkdir()
    cut = half_record(full)
    log.write_bytes(full[:cut])
    wh_a = str(tmp_path / "a")
    first = pt2logs.ingest([str(log.parent)], wh_a)
    time.sleep(0.01)
    log.write_bytes(full)  # the job wrote more
    second = pt2logs.ingest([str(log.parent)], wh_a)
    assert second.runs_updated == 1 and second.run_ids == first.run_ids
    wh_b = str(tmp_path / "b")
    pt2logs.ingest([str(log.parent)], wh_b)
    assert snapshot(wh_a) == snapshot(wh_b)
    con = pt2logs.connect(wh_a)
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 1


def _ingest_cmd(corpus: Path, wh: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pt2logs",
        "ingest",
        str(corpus),
        "--warehouse",
        wh,
        "--jobs",
        "1",
        "-q",
    ]


def _visible_runs_are_whole(wh: str) -> int:
    con = pt2logs.connect(wh)
    rows = con.execute("""
        SELECT r.run_id, r.n_files, (SELECT count(*) FROM files f WHERE f.run_id = r.run_id) FROM runs r""").fetchall()
    for run_id, n_files, got_files in rows:
        assert n_files == got_files, run_id
    # every trace file of a visible run has all its events visible
    for path, n, got in con.execute("""SELECT f.path, f.n_events,
            (SELECT count(*) FROM events e WHERE e.run_id = f.run_id AND e.file = f.relpath)
            FROM files f WHERE f.format = 'torch_trace'""").fetchall():
        assert n == got, path
    return len(rows)


def _committed_txns(wh: str) -> set[str]:
    """The transactions whose ``runs`` file is written: committed (files, then runs rows)."""
    return {txn_of(p.name) for p in Path(wh, "runs").rglob("part-*.parquet")}


def _kill_inside_a_transaction(p: subprocess.Popen, wh: str, after: int, delay: float) -> None:
    """SIGKILL ``p`` ``delay`` s after it opened the transaction that follows its ``after``-th commit:
    inside a transaction, whatever the machine's speed (a kill at a fixed time fell before the first
    write on a loaded machine, or after the last commit on a quiet one)."""
    end = time.monotonic() + 300
    while time.monotonic() < end and p.poll() is None:
        done = _committed_txns(wh)
        if len(done) >= after and any(m.stem not in done for m in Path(wh, "_txn").glob("*.json")):
            break
        time.sleep(0.02)
    assert p.poll() is None, "the ingest ended before the transaction to kill"
    time.sleep(delay)
    p.send_signal(signal.SIGKILL)
    p.wait()


@pytest.mark.slow
def test_sigkill_midway_then_rerun_equals_an_uninterrupted_ingest(tmp_path):
    # 12 runs in 4 transactions of 3; each attempt is killed inside another one: the first (nothing
    # committed yet), the second, the third (4 CPU s an attempt, not 8: 24 runs and a kill at a random
    # 1.2-3 s landed anywhere, also before the first write)
    corpus = make_corpus(tmp_path / "corpus", 12)
    env = {**os.environ, "PT2LOGS_TXN_RUNS": "3"}
    ref = str(tmp_path / "ref")
    subprocess.run(_ingest_cmd(corpus, ref), check=True, env=env)
    expected = snapshot(ref)
    rng = random.Random(7)
    for attempt in range(3):
        wh = str(tmp_path / f"killed{attempt}")
        p = subprocess.Popen(_ingest_cmd(corpus, wh), env=env)
        _kill_inside_a_transaction(p, wh, after=attempt, delay=rng.uniform(0, 0.2))
        # readable right away, with no partial run visible
        if Path(wh, "_meta.json").exists():
            assert _visible_runs_are_whole(wh) == 3 * len(_committed_txns(wh))
        subprocess.run(_ingest_cmd(corpus, wh), check=True, env=env)
        assert snapshot(wh) == expected
        settled(wh)  # the views writer the ingest forked may still be writing its file
        leftovers = [
            p for p in Path(wh).rglob("*") if p.name.endswith(".tmp") or p.parent.name == "_txn"
        ]
        assert leftovers == []


@pytest.mark.slow
def test_two_ingests_at_once_do_not_corrupt(tmp_path):
    corpus = make_corpus(tmp_path / "corpus", 12)
    ref = str(tmp_path / "ref")
    subprocess.run(_ingest_cmd(corpus, ref), check=True)
    wh = str(tmp_path / "shared")
    a = subprocess.Popen(_ingest_cmd(corpus, wh))
    b = subprocess.Popen(_ingest_cmd(corpus, wh))
    assert a.wait() == 0 and b.wait() == 0
    assert _visible_runs_are_whole(wh) == 12
    assert snapshot(wh) == snapshot(ref)


def test_parquet_carries_table_name_and_schema_version(wh):
    pt2logs.ingest([str(fixture_path("tlparse", "simple.log"))], wh)
    from pt2logs.store.parts import PAYLOADS, file_schema

    tables = set()
    for f in Path(wh).rglob("*.parquet"):
        meta = pq.read_schema(f).metadata
        table = meta[b"pt2logs.table"].decode()
        tables.add(table)
        assert f.relative_to(wh).parts[0] == table
        assert (
            meta[b"pt2logs.schema_version"]
            == file_schema(table).metadata[b"pt2logs.schema_version"]
        )
        assert table == PAYLOADS or int(meta[b"pt2logs.schema_version"]) == TABLES[table].version
    assert {"events", PAYLOADS} <= tables


@pytest.mark.views_file
def test_other_engines_read_the_warehouse_without_pt2logs(wh):
    import duckdb
    import polars as pl
    import pyarrow.dataset as ds

    pt2logs.ingest([str(fixture_path("tlparse", "multi_rank_logs"))], wh)
    n = pt2logs.connect(wh).execute("SELECT count(*) FROM events").fetchone()[0]
    assert n > 0
    d = ds.dataset(f"{wh}/events", format="parquet", partitioning="hive")
    assert d.count_rows() == n
    assert (
        pl.scan_parquet(f"{wh}/events/**/*.parquet", hive_partitioning=True)
        .select(pl.len())
        .collect()
        .item()
        == n
    )
    got = duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{wh}/events/**/*.parquet', union_by_name=true, hive_partitioning=true)"
    ).fetchall()[0][0]
    assert got == n
    # and the DuckDB file of views opens in a plain DuckDB
    con = duckdb.connect(f"{wh}/pt2logs.duckdb", read_only=True)
    assert con.execute("SELECT count(*) FROM events").fetchone()[0] == n


def test_a_killed_transactions_files_are_invisible_and_cleaned(tmp_path, wh):
    from pt2logs.store.warehouse import Warehouse

    pt2logs.ingest([str(fixture_path("tlparse", "simple.log"))], wh)
    before = snapshot(wh)
    w = Warehouse(wh)
    txn = w.begin()
    writer = txn.writer()
    con = pt2logs.connect(wh)
    batch = arrow_table(con, "SELECT * EXCLUDE (ingest_date) FROM events")
    batch = batch.set_column(
        batch.schema.get_field_index("txn"), "txn", pa.array([txn.id] * batch.num_rows)
    )
    writer.write_table("events", batch.cast(TABLES["events"].schema))
    writer.close()  # data written, never committed
    assert snapshot(wh) == before
    txn._release(delete=False)  # the process "dies" holding an uncommitted marker
    removed = w.recover()
    assert len(removed) == 1 and not Path(removed[0]).exists()
    shutil.rmtree(Path(wh) / "_txn")
    assert snapshot(wh) == before

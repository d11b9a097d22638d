"""Writers of one S3 warehouse in several processes, on a real S3-compatible server (moto):
the lock, transaction leases, and a compaction overlapping an ingest."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.conftest import SAMPLES, gpu_trace_head, half_record
from tests.s3server import moto_s3

import pt2logs

ROOT = Path(__file__).resolve().parents[1]
LEASE = "2"  # seconds: heartbeats every 1/3 s, a writer silent for 2 s is dead
TABLES = ("events", "compilation_metrics", "recompiles", "graph_breaks", "compile_phases")
LOG = "dedicated_log_torch_trace_x.log"


@pytest.fixture(scope="module")
def s3():
    with moto_s3() as fs:
        yield fs


@pytest.fixture
def lease(monkeypatch):
    monkeypatch.setenv("PT2LOGS_LEASE_S", LEASE)


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PT2LOGS_LEASE_S": LEASE, **extra}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")])
    return env


def _start(*args: str, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "pt2logs", *args],
        env=_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_reached(flag: Path, p: subprocess.Popen, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while not Path(str(flag) + ".reached").exists():
        assert p.poll() is None, f"finished without reaching the pause point:\n{p.stdout.read()}"
        assert time.monotonic() < end, "pause point not reached"
        time.sleep(0.05)


def _finish(p: subprocess.Popen) -> None:
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 0, out


def _inputs(tmp_path: Path, s3, bucket: str) -> tuple[Path, bytes, int]:
    """A job's log (cut in the middle of its records) and a second run, locally and under s3://bucket/."""
    full = gpu_trace_head()
    cut = half_record(full)
    local = tmp_path / "traces"
    (local / "job").mkdir(parents=True)
    shutil.copytree(SAMPLES / "recompiles", local / "other")
    s3.mkdir(bucket)
    return local, full, cut


def _rows(con, table: str) -> list:
    """A table's live rows without the columns that differ between equivalent ingests, and without paths."""
    cols = [
        d[0]
        for d in con.execute(f'SELECT * FROM "{table}" LIMIT 0').description
        if d[0] not in ("txn", "ingest_date")
    ]
    rows = con.execute(f'SELECT {", ".join(cols)} FROM "{table}"').fetchall()
    return sorted(
        (
            tuple(v for v in r if not (isinstance(v, str) and ("s3://" in v or v.startswith("/"))))
            for r in rows
        ),
        key=repr,
    )


def _same_rows(a: str, b: str) -> None:
    ca, cb = pt2logs.connect(a), pt2logs.connect(b)
    for table in TABLES:
        assert _rows(ca, table) == _rows(cb, table), table
    q = "SELECT name, n_events, n_files FROM runs ORDER BY name"
    assert ca.execute(q).fetchall() == cb.execute(q).fetchall()


def test_a_compaction_overlapping_the_reingest_of_a_grown_log_keeps_the_grown_log(
    s3, lease, tmp_path
):
    local, full, cut = _inputs(tmp_path, s3, "lease-a")
    wh = "s3://lease-a/wh/"
    s3.pipe(f"lease-a/traces/job/{LOG}", full[:cut])
    pt2logs.ingest(["s3://lease-a/traces/"], wh)
    s3.put(str(local / "other"), "lease-a/traces/other", recursive=True)
    pt2logs.ingest(["s3://lease-a/traces/"], wh)  # a second transaction: compact has files to merge
    s3.pipe(f"lease-a/traces/job/{LOG}", full)  # the job wrote more
    flag = tmp_path / "go"
    compaction = _start("compact", "-w", wh, PT2LOGS_PAUSE_AT=f"compact.data:{flag}")
    _wait_reached(flag, compaction)  # it has read the old rows and written their copies
    ingest = _start("ingest", "s3://lease-a/traces/", "-w", wh, "--jobs", "1", "-q")
    time.sleep(3 * float(LEASE))  # three leases: only the compaction's heartbeat keeps its lock
    assert ingest.poll() is None, "the ingest did not wait for the compaction's lock"
    flag.touch()
    _finish(compaction)
    _finish(ingest)
    (local / "job" / LOG).write_bytes(full)
    ref = str(tmp_path / "ref")
    pt2logs.ingest([str(local)], ref)
    _same_rows(wh, ref)  # the grown log's rows, not the compaction's copy of the old ones


def test_a_compaction_killed_holding_the_lock_blocks_writers_for_one_lease_only(
    s3, lease, tmp_path
):
    local, full, _ = _inputs(tmp_path, s3, "lease-c")
    wh = "s3://lease-c/wh/"
    s3.pipe(f"lease-c/traces/job/{LOG}", full)
    pt2logs.ingest(["s3://lease-c/traces/"], wh)
    s3.put(str(local / "other"), "lease-c/traces/other", recursive=True)
    pt2logs.ingest(["s3://lease-c/traces/"], wh)
    (local / "job" / LOG).write_bytes(full)
    ref = str(tmp_path / "ref")
    pt2logs.ingest([str(local)], ref)
    flag = tmp_path / "go"
    compaction = _start("compact", "-w", wh, PT2LOGS_PAUSE_AT=f"compact.data:{flag}")
    _wait_reached(flag, compaction)
    compaction.send_signal(signal.SIGKILL)
    compaction.wait()
    t0 = time.monotonic()
    res = pt2logs.ingest(
        ["s3://lease-c/traces/"], wh
    )  # waits until the dead holder's lease expired
    assert time.monotonic() - t0 >= float(LEASE)
    assert res.runs_unchanged == 2
    _same_rows(wh, ref)
    time.sleep(
        float(LEASE) + 1
    )  # by now the compaction's transaction is expired too, on the server's clock
    again = pt2logs.ingest(["s3://lease-c/traces/"], wh)
    assert res.removed_orphans + again.removed_orphans > 0  # the killed compaction's copies
    _same_rows(wh, ref)
    assert s3.glob("lease-c/wh/_txn/*") == [] and not s3.exists("lease-c/wh/_lock")
    # and a compaction that is not killed: one file per table, the replaced ones deleted (no grace here)
    from pt2logs.store.compact import compact

    assert compact(wh, grace_s=0).partitions
    _same_rows(wh, ref)
    s3.invalidate_cache()
    parts = [p for p in s3.find("lease-c/wh/") if p.endswith(".parquet")]
    assert len(parts) == len({p.split("/")[2] for p in parts})  # one per table
    assert s3.glob("lease-c/wh/_gc/*") == [] and s3.glob("lease-c/wh/_txn/*") == []


def _files_of(s3, bucket: str, txn: str) -> list[str]:
    return [p for p in s3.find(f"{bucket}/wh/") if f"part-{txn}-" in p]


def test_recovery_spares_a_running_transaction_and_rolls_back_an_expired_one(s3, lease, tmp_path):
    local, full, _ = _inputs(tmp_path, s3, "lease-b")
    wh = "s3://lease-b/wh/"
    s3.pipe(f"lease-b/in1/job/{LOG}", full)
    s3.put(str(local / "other"), "lease-b/in2/other", recursive=True)
    pt2logs.ingest(["s3://lease-b/in2/"], wh)
    flag = tmp_path / "go"
    slow = _start(
        "ingest",
        "s3://lease-b/in1/",
        "-w",
        wh,
        "--jobs",
        "1",
        "-q",
        PT2LOGS_PAUSE_AT=f"txn.data:{flag}",
    )
    _wait_reached(flag, slow)  # its data files are written, its commit not yet
    s3.invalidate_cache()
    (marker,) = s3.glob("lease-b/wh/_txn/*.json")
    txn = marker.rsplit("/", 1)[1][: -len(".json")]
    written = _files_of(s3, "lease-b", txn)
    assert written
    time.sleep(1.5 * float(LEASE))  # its marker is older than a lease, but renewed by its heartbeat
    res = pt2logs.ingest(["s3://lease-b/in2/"], wh)  # another writer recovers meanwhile
    assert res.runs_unchanged == 1 and res.removed_orphans == 0
    s3.invalidate_cache()
    assert _files_of(s3, "lease-b", txn) == written
    flag.touch()
    _finish(slow)
    (local / "job").mkdir(exist_ok=True)
    (local / "job" / LOG).write_bytes(full)
    ref = str(tmp_path / "ref")
    pt2logs.ingest([str(local / "other"), str(local / "job")], ref)
    _same_rows(wh, ref)

    # a writer killed in the middle of its transaction: rolled back once its lease expired
    flag2 = tmp_path / "go2"
    killed = _start(
        "ingest",
        "s3://lease-b/in1/",
        "-w",
        wh,
        "--jobs",
        "1",
        "-q",
        "--force",
        PT2LOGS_PAUSE_AT=f"txn.data:{flag2}",
    )
    _wait_reached(flag2, killed)
    s3.invalidate_cache()
    (marker,) = s3.glob("lease-b/wh/_txn/*.json")
    txn = marker.rsplit("/", 1)[1][: -len(".json")]
    assert _files_of(s3, "lease-b", txn)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    time.sleep(2 * float(LEASE))
    res = pt2logs.ingest(["s3://lease-b/in2/"], wh)
    assert res.removed_orphans > 0
    s3.invalidate_cache()
    assert _files_of(s3, "lease-b", txn) == [] and s3.glob("lease-b/wh/_txn/*") == []
    _same_rows(wh, ref)

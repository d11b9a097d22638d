"""Readers of an S3 warehouse while another process commits, on a real S3-compatible server (moto):
every read succeeds and sees one consistent snapshot, as on a local warehouse (docs/warehouse.md,
"Commit records"). Bounded: a few writer rounds, seconds."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.conftest import SAMPLES
from tests.s3server import moto_s3

import pt2logs
from pt2logs.query.views import arrow_table

ROOT = Path(__file__).resolve().parents[1]
#: the writer's rounds (an ingest committing both runs again, a compaction every other round)
WRITER_ROUNDS = 8
#: every snapshot must show exactly these (one live transaction per run, all of its rows)
FACTS = (
    "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM graph_breaks), (SELECT count(*) FROM recompiles), "
    "(SELECT count(*) FROM events)"
)


@pytest.fixture(scope="module")
def s3():
    with moto_s3() as fs:
        yield fs


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, **extra}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")])
    return env


def test_an_old_connection_takes_a_new_snapshot_without_registering_the_filesystem_again(
    s3, monkeypatch
):
    s3.mkdir("snap-old")
    wh = "s3://snap-old/wh/"
    pt2logs.ingest([str(SAMPLES / "recompiles")], wh)
    monkeypatch.setenv("PT2LOGS_GC_GRACE_S", "1")
    con = pt2logs.connect(wh)
    time.sleep(0.6)  # older than half the grace period: the next query takes a new snapshot
    assert arrow_table(con, "SELECT count(*) AS n FROM runs").column(0)[0].as_py() == 1
    con.close()


def test_reads_during_commits_on_s3_all_succeed_and_agree(s3, tmp_path):
    s3.mkdir("snap-busy")
    wh = "s3://snap-busy/wh/"
    s3.put(str(SAMPLES / "graph_breaks"), "snap-busy/traces/graph_breaks", recursive=True)
    s3.put(str(SAMPLES / "recompiles"), "snap-busy/traces/recompiles", recursive=True)
    pt2logs.ingest(["s3://snap-busy/traces/"], wh)
    con = pt2logs.connect(wh)
    facts = con.execute(FACTS).fetchone()
    con.close()
    assert facts[0] == 2 and facts[1] == 7
    # the writer: ingests that commit every run again, a compaction every other round (short grace
    # period: replaced files are deleted while readers run), until the readers are done, at most
    # WRITER_ROUNDS (40 before: on a loaded machine the readers took minutes, the writer kept committing
    # all along, and the moto server in this process served it: 85 CPU s for this test)
    stop = tmp_path / "stop"
    script = (
        "import pt2logs, sys, os\n"
        "from pt2logs.store.compact import compact\n"
        f"for i in range({WRITER_ROUNDS}):\n"
        "    if os.path.exists(sys.argv[2]): break\n"
        "    pt2logs.ingest(['s3://snap-busy/traces/'], sys.argv[1], force=True)\n"
        "    if i % 2: compact(sys.argv[1]); open(sys.argv[2] + '.compacted', 'w').close()\n"
        "    print('round', i, flush=True)\n"
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", script, wh, str(stop)],
        env=_env(PT2LOGS_GC_GRACE_S="3"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    # CLI reads (each a process, the summary a long reader that re-snapshots between its queries) run
    # beside the Python reads: the same reads as one after the other, in the time of the longest
    clis = [
        subprocess.Popen(
            [sys.executable, "-m", "pt2logs", *args],
            env=_env(PT2LOGS_GC_GRACE_S="3"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for args in (
            ["summary", "-w", wh],
            ["query", "SELECT count(*) AS n FROM graph_breaks", "-w", wh, "--format", "csv"],
        )
    ]
    old = pt2logs.connect(
        wh
    )  # one connection kept through the writer's commits (re-snapshots after 1.5 s)
    seen, errors = 0, []
    os.environ["PT2LOGS_GC_GRACE_S"] = "3"
    try:
        # at least 6 rounds of reads, and on until the writer's first compaction is over: reads that all
        # ended before it (snapshots of 3 requests, not 76) would no longer see a writer without a grace
        # period delete files they read
        compacted = tmp_path / "stop.compacted"
        for i in range(60):
            if i >= 6 and compacted.exists():
                break
            for c in (old, None):
                fresh = c is None
                c = c or pt2logs.connect(wh)
                try:
                    got = tuple(arrow_table(c, FACTS).to_pylist()[0].values())
                    if got != facts:
                        errors.append(f"python read {got} != {facts}")
                    seen += 1
                except Exception as e:  # noqa: BLE001 - counted: every read must succeed
                    errors.append(f"python read: {type(e).__name__}: {e}")
                finally:
                    if fresh:
                        c.close()
            time.sleep(0.2)
        for name, p in zip(("summary", "query"), clis):
            stdout, stderr = p.communicate(timeout=300)
            if p.returncode != 0:
                errors.append(f"{name}: {stderr.strip()[-300:]}")
            elif name == "query" and stdout.split()[-1] != "7":
                errors.append(f"query: {stdout}")
    finally:
        os.environ.pop("PT2LOGS_GC_GRACE_S", None)
        stop.touch()
        out = writer.communicate(timeout=300)[0]
        old.close()
        for p in clis:
            if p.poll() is None:
                p.kill()
    assert writer.returncode == 0, out
    assert out.count("round") >= 2, out  # commits (and a compaction) landed while the readers read
    assert seen >= 12 and compacted.exists()
    assert errors == [], errors[:5]


def test_check_and_reads_on_s3_name_a_truncated_file(s3):
    """On an object store the record's checksum is the ETag: a partial upload over a file is found by
    check, left out by reads with a warning, and a re-ingest restores its run."""
    from pt2logs.query.views import read_warnings
    from pt2logs.store.repair import check

    s3.mkdir("snap-check")
    wh = "s3://snap-check/wh/"
    pt2logs.ingest([str(SAMPLES / "graph_breaks")], wh)
    pt2logs.ingest([str(SAMPLES / "recompiles")], wh)
    assert check(wh).ok
    s3.invalidate_cache()
    victim = next(p for p in s3.find("snap-check/wh/graph_breaks/") if p.endswith(".parquet"))
    s3.pipe(victim, s3.cat(victim)[:500])  # a partial copy
    res = check(wh)
    assert not res.ok and [f.path.rsplit("/", 1)[1] for f in res.damaged] == [
        victim.rsplit("/", 1)[1]
    ]
    con = pt2logs.connect(wh)
    assert any(victim.rsplit("/", 1)[1] in w for w in read_warnings(con))
    assert (
        con.execute("SELECT count(*) FROM recompiles").fetchone()[0] > 0
    )  # the rest still answers
    con.close()
    assert pt2logs.ingest([str(SAMPLES / "graph_breaks")], wh).runs_updated == 1
    con = pt2logs.connect(wh)
    assert (
        con.execute("SELECT count(*) FROM graph_breaks").fetchone()[0] == 7
        and read_warnings(con) == []
    )
    con.close()

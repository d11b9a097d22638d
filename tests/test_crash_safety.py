"""Kill points of the writers: compact and ingest killed after each step, leftovers of dead writers,
pool workers of a killed ingest, readers running while compactions delete files."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from tests.conftest import SAMPLES, settled, tables_rows

import pt2logs
import pt2logs.tables  # noqa: F401  (registers every table)
from pt2logs.store.faults import COMPACT_STEPS, TXN_STEPS
from pt2logs.tables.schema import TABLES

ALL_TABLES = sorted(TABLES)
DROP = ("txn", "ingest_date", "ingested_at", "committed_at")
ROOT = Path(__file__).resolve().parents[1]


def snapshot(wh: str) -> dict[str, list]:
    return tables_rows(wh, dict.fromkeys(ALL_TABLES, DROP))


def counts(wh: str) -> dict[str, int]:
    con = pt2logs.connect(wh)
    out = {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in ALL_TABLES}
    con.close()
    return out


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, **extra}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")])
    return env


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pt2logs", *args],
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _leftovers(wh: str) -> list[str]:
    """Markers, garbage records and temporary files: none must stay once a writer ran after the kill."""
    settled(wh)
    return sorted(
        str(p.relative_to(wh))
        for p in Path(wh).rglob("*")
        if p.is_file() and (p.parent.name in ("_txn", "_gc") or ".tmp" in p.name)
    )


@pytest.fixture(scope="module")
def ingested(tmp_path_factory) -> tuple[str, dict, dict]:
    """The sample traces ingested once for the module: (warehouse, snapshot, counts). The tests whose
    subject is what happens to a warehouse that holds them (kills, compactions, snapshots) start from a
    copy of it, not from an ingest of their own (1.3 CPU s each, and a snapshot of it 1 s more)."""
    wh = str(tmp_path_factory.mktemp("ingested") / "wh")
    pt2logs.ingest([str(SAMPLES)], wh)
    return wh, snapshot(wh), counts(wh)


def copy_of(warehouse: tuple[str, dict, dict], tmp_path: Path) -> str:
    wh = str(tmp_path / "wh")
    shutil.copytree(warehouse[0], wh)
    return wh


@pytest.fixture(scope="module")
def compactable(tmp_path_factory, ingested) -> tuple[str, dict, dict]:
    """The sample traces ingested, then one run ingested again (dead rows): each partition has several
    files per table, so compact rewrites it. (warehouse, snapshot, counts)"""
    wh = copy_of(ingested, tmp_path_factory.mktemp("compactable"))
    pt2logs.ingest([str(SAMPLES / "recompiles")], wh, force=True)
    return wh, snapshot(wh), counts(wh)


@pytest.mark.parametrize("step", COMPACT_STEPS)
def test_compact_killed_after_any_step_loses_nothing(tmp_path, monkeypatch, compactable, step):
    monkeypatch.setenv(
        "PT2LOGS_GC_GRACE_S", "0"
    )  # replaced files are deleted in the same run: more kill points
    src, before, before_counts = compactable
    assert before_counts["recompiles"] > 0 and before_counts["runs"] == 5
    wh = str(tmp_path / "wh")
    shutil.copytree(src, wh)
    p = _cli("compact", "-w", wh, PT2LOGS_DIE_AFTER=step)
    assert p.returncode == 137, p.stdout + p.stderr  # killed right after `step`
    # readers see every run, whole, at once (nothing ran since the kill)
    assert counts(wh) == before_counts
    # the next writer recovers: nothing changed in the inputs, nothing lost
    res = pt2logs.ingest([str(SAMPLES)], wh)
    assert res.runs_unchanged == 5 and res.runs_new == res.runs_updated == 0
    assert snapshot(wh) == before
    # and compact finishes the job
    from pt2logs.store.compact import compact

    compact(wh)
    assert snapshot(wh) == before
    assert _leftovers(wh) == []
    assert compact(wh).partitions == []


@pytest.mark.parametrize("step", TXN_STEPS)
def test_ingest_killed_after_any_commit_step_loses_nothing(tmp_path, compactable, step):
    src, before, before_counts = compactable
    wh = str(tmp_path / "wh")
    shutil.copytree(src, wh)
    p = _cli(
        "ingest",
        str(SAMPLES / "recompiles"),
        "-w",
        wh,
        "--force",
        "--jobs",
        "1",
        "-q",
        PT2LOGS_DIE_AFTER=step,
    )
    assert p.returncode == 137, p.stdout + p.stderr
    assert counts(wh) == before_counts  # the run as it was, or as re-ingested: the same rows
    res = pt2logs.ingest([str(SAMPLES)], wh)
    assert res.runs_new == 0
    assert snapshot(wh) == before
    assert _leftovers(wh) == []


_KILLED_TXN = """
import os, sys
from pt2logs.store.warehouse import Warehouse
txn = Warehouse(sys.argv[1]).begin()
print(txn.id, txn.info.ingest_date, flush=True)
os._exit(137)
"""

_ORPHAN_WORKER = """
import os, sys
import pyarrow as pa
from pt2logs.store.warehouse import PartWriter, TxnInfo
from pt2logs.tables.schema import TABLES
from pt2logs.query.views import arrow_table, connect
wh, txn, day = sys.argv[1:4]
con = connect(wh)
def rows(table):
    t = arrow_table(con, f'SELECT * EXCLUDE (ingest_date) FROM "{table}"')
    t = t.set_column(t.schema.get_field_index("txn"), "txn", pa.array([txn] * t.num_rows))
    return t.cast(TABLES[table].schema)
done = PartWriter(TxnInfo(wh, txn, day), "w1")
done.write_table("events", rows("events"))
done.close()                                   # a part it finished
half = PartWriter(TxnInfo(wh, txn, day), "w2")
half.write_table("compile_phases", rows("compile_phases"))
half._flush("compile_phases")                  # and one it was writing when it died
os._exit(137)
"""

_KILLED_VIEWS_WRITER = """
import os, sys, duckdb
from pt2logs.query.view_sql import view_statements
from pt2logs.store.warehouse import Warehouse
wh = Warehouse(sys.argv[1])
con = duckdb.connect(wh.path(f"pt2logs.duckdb.{os.getpid()}.tmp"))
for s in view_statements(con, wh):
    con.execute(s)
os._exit(137)
"""


def _py(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_temporary_files_and_orphans_of_dead_writers_are_cleaned(tmp_path, ingested):
    wh = copy_of(ingested, tmp_path)
    before = ingested[1]
    # an ingest killed with its pool workers still running: the next ingest recovers its transaction...
    p = _py(_KILLED_TXN, wh)
    assert p.returncode == 137
    txn, day = p.stdout.split()
    pt2logs.ingest([str(SAMPLES)], wh)
    # ...and then a worker of the killed ingest, still running, writes one part and dies writing another
    assert _py(_ORPHAN_WORKER, wh, txn, day).returncode == 137
    # and a writer of the views file is killed: DuckDB leaves the file and its WAL
    assert _py(_KILLED_VIEWS_WRITER, wh).returncode == 137
    left = [p.name for p in Path(wh).rglob("*") if ".tmp" in p.name or txn in p.name]
    assert any(n.endswith(".parquet.tmp") for n in left) and any(
        n.endswith(".tmp.wal") for n in left
    ), left
    assert snapshot(wh) == before  # invisible
    res = pt2logs.ingest([str(SAMPLES)], wh)
    assert res.runs_unchanged == 5
    assert [p.name for p in Path(wh).rglob("*") if ".tmp" in p.name or txn in p.name] == []
    assert snapshot(wh) == before


def _proc_children(pid: int) -> list:
    import psutil

    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def test_pool_workers_end_when_their_ingest_is_killed(tmp_path):
    import psutil

    wh = str(tmp_path / "wh")
    flag = str(tmp_path / "go")
    p = subprocess.Popen(
        [sys.executable, "-m", "pt2logs", "ingest", str(SAMPLES), "-w", wh, "--jobs", "2", "-q"],
        env=_env(PT2LOGS_PAUSE_AT=f"txn.data:{flag}"),
    )
    workers: list = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and p.poll() is None:
        workers = _proc_children(p.pid)
        if len(workers) >= 2:
            break
        time.sleep(0.01)
    assert len(workers) >= 2, "the pool did not start"
    p.send_signal(signal.SIGKILL)
    p.wait()

    def alive(w) -> bool:
        try:
            return w.is_running() and w.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(alive(w) for w in workers):
        time.sleep(0.1)
    survivors = [w.pid for w in workers if alive(w)]
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)  # do not leak them into the rest of the session
    assert survivors == []


_READER = """
import sys
from click.testing import CliRunner
from pt2logs.cli import main
wh, rounds = sys.argv[1], int(sys.argv[2])
runner = CliRunner()
ok = failed = 0
first = {}
for _ in range(rounds):  # counted, not timed: the compactions run as long as the reads do
    for args in (["summary", "-w", wh], ["query", "recompile_list", "-w", wh, "-f", "csv"],
                 ["query", "run_overview", "-w", wh, "-f", "csv"]):
        r = runner.invoke(main, args)
        key = " ".join(args[:2])
        if r.exit_code == 0 and first.setdefault(key, r.output) == r.output:
            ok += 1
        else:  # an error, or an answer that differs from the first (rows of two commits, or none)
            failed += 1
            print("FAILED", key, (r.output or repr(r.exception))[:400].replace(chr(10), " "), file=sys.stderr)
print(ok, failed)
"""


def test_readers_never_fail_while_compactions_replace_files(tmp_path, monkeypatch, ingested):
    from pt2logs.store.compact import compact

    monkeypatch.setenv(
        "PT2LOGS_GC_GRACE_S", "1"
    )  # replaced files are deleted 1 s later, by the next compaction

    wh = copy_of(ingested, tmp_path)
    before = ingested[2]
    reader = subprocess.Popen(
        [sys.executable, "-c", _READER, wh, "6"],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    rewrites = deleted = 0
    while reader.poll() is None:
        res = compact(wh, min_files=1)  # every partition rewritten
        rewrites += len(res.partitions)
        deleted += getattr(res, "files_deleted", 0)
        # a breath between compactions: back to back they took a core from the reader for as long as
        # it ran (71 CPU s on a loaded machine); each read command still sees several replacements
        time.sleep(0.3)
    out, err = reader.communicate()
    ok, failed = map(int, out.split()[-2:])
    assert failed == 0, err[-3000:]
    assert rewrites > 5 and deleted > 0 and ok > 10
    assert counts(wh) == before


def test_a_compaction_copy_loses_to_a_later_ingest_of_its_run_even_when_it_commits_last(
    tmp_path, monkeypatch
):
    """Compaction copies keep the committed_at of what they copy (+1 µs). Here the lock that orders
    the two is taken away: a re-ingest of a grown log commits while a compaction that copied the old
    rows is paused, the compaction commits after it, and the grown log still wins."""
    import contextlib
    import threading

    from tests.conftest import gpu_trace_head, half_record

    from pt2logs.store.compact import compact
    from pt2logs.store.warehouse import Warehouse

    full = gpu_trace_head()
    cut = half_record(full)
    local = tmp_path / "traces"
    (local / "job").mkdir(parents=True)
    log = local / "job" / "dedicated_log_torch_trace_x.log"
    log.write_bytes(full[:cut])
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(local)], wh)
    shutil.copytree(SAMPLES / "recompiles", local / "other")
    pt2logs.ingest([str(local)], wh)
    monkeypatch.setattr(Warehouse, "lock", lambda self: contextlib.nullcontext())
    monkeypatch.setattr(Warehouse, "check_lock", lambda self, what: None, raising=False)
    flag = tmp_path / "go"
    monkeypatch.setenv("PT2LOGS_PAUSE_AT", f"compact.data:{flag}")
    compaction = threading.Thread(target=compact, args=(wh,))
    compaction.start()
    deadline = time.monotonic() + 120
    while not Path(f"{flag}.reached").exists():
        assert compaction.is_alive() and time.monotonic() < deadline, (
            "compact did not reach its pause point"
        )
        time.sleep(0.05)
    time.sleep(0.01)
    log.write_bytes(full)  # the job wrote more
    assert (
        pt2logs.ingest([str(local)], wh).runs_updated == 1
    )  # commits while the compaction is paused
    flag.touch()
    compaction.join()
    ref = str(tmp_path / "ref")
    pt2logs.ingest([str(local)], ref)
    assert snapshot(wh) == snapshot(ref)


def test_a_connection_older_than_the_deletion_of_its_files_takes_a_new_snapshot(
    tmp_path, monkeypatch, ingested
):
    """A connection sees the runs committed when it was made. Files a compaction replaced are deleted
    once the grace period has passed (15 minutes by default, 2 s here): a connection whose snapshot
    is older than half of it takes a new one before its next query, and answers the same."""
    from pt2logs.query.queries import run_named
    from pt2logs.store.compact import compact

    monkeypatch.setenv("PT2LOGS_GC_GRACE_S", "2")
    wh = copy_of(ingested, tmp_path)
    con = pt2logs.connect(wh)
    before = run_named(con, "run_overview").to_pylist()
    assert sum(r["compiles"] for r in before) > 0
    compact(wh, min_files=1)
    time.sleep(2.1)
    assert (
        compact(wh, min_files=1).files_deleted > 0
    )  # the first compaction's replaced files are gone
    assert run_named(con, "run_overview").to_pylist() == before


def test_a_connection_lists_the_runs_files_once_and_its_snapshot_is_that_listing(
    tmp_path, monkeypatch, ingested
):
    """The commits a connection's snapshot records (what a query that outlives the grace period compares
    with, below) are the listing its views were made from: the warehouse is listed once per connect (on
    S3 a LIST per table folder and 1,000 files), replaced files waiting for deletion included, as
    the comparison lists them."""
    from pt2logs.query import views
    from pt2logs.store import manifest
    from pt2logs.store.compact import compact
    from pt2logs.store.warehouse import Warehouse

    wh = copy_of(ingested, tmp_path)
    compact(wh, min_files=1)  # the runs files it replaced wait for deletion (the grace period)
    listed: list[str] = []
    listing = manifest.listing
    monkeypatch.setattr(manifest, "listing", lambda lay: listed.append("all") or listing(lay))
    con = pt2logs.connect(wh)
    assert listed == ["all"]
    commits = views._SNAPSHOTS[con][2]
    assert commits == views._commits(Warehouse(wh)) and len(commits) > len(
        Warehouse(wh).live_files("runs")
    )


def test_a_query_that_outlives_the_grace_period_runs_again_on_a_new_snapshot(
    tmp_path, monkeypatch, ingested
):
    """A connection reads the committed runs once (its snapshot). Once the grace period has passed, a
    compaction may delete the snapshot's files, and a query that lists the files after that sees none of
    its runs' rows, without an error. Such a query (it ended after the grace period, and commits landed
    since the snapshot) is run again on a new snapshot. Here the compactions delete at once and the clock
    says the query took longer than the grace period."""
    from pt2logs.query import views
    from pt2logs.store.compact import compact

    wh = copy_of(ingested, tmp_path)
    want = ingested[2]["recompiles"]
    assert want > 0
    now, queued = [1000.0], []  # the clock stands still at the snapshot and during the compactions

    class Clock:
        @staticmethod
        def monotonic() -> float:
            return queued.pop(0) if queued else now[0]

    monkeypatch.setenv("PT2LOGS_GC_GRACE_S", "60")
    monkeypatch.setattr(views, "time", Clock)
    con = pt2logs.connect(wh)
    for _ in range(2):  # the snapshot's files replaced, then deleted (no grace)
        compact(wh, min_files=1, grace_s=0)
    queued.append(1010.0)  # the check before the query: the snapshot is fresh enough
    now[0] = 1100.0  # ... and when the query ends, it has taken longer than the grace period
    got = views.arrow_table(con, "SELECT count(*) AS n FROM recompiles").column("n")[0].as_py()
    assert got == want
    con.close()

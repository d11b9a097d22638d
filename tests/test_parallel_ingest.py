"""Many small runs through the process pool: the same rows as one process, one Parquet file per table
per worker, progress per chunk, and a worker that fails or dies costs its transaction, nothing more."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
from tests.conftest import SAMPLES

import pt2logs
from pt2logs.ingestion import plan
from pt2logs.ingestion.engines import local
from pt2logs.ingestion.engines.inprocess import Engine
from pt2logs.inputs.discover import discover
from pt2logs.tables.schema import TABLES

DROP = ("txn", "ingest_date", "ingested_at", "committed_at")


@pytest.fixture(scope="module")
def many_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """18 single-file runs (copies of three real traces, each made its own run by its first line's
    thread id, as bench/corpus.py does) and one two-rank run (two files of one run)."""
    root = tmp_path_factory.mktemp("many")
    srcs = [gzip.decompress(p.read_bytes()) for p in sorted(SAMPLES.glob("*/trace/*.log.gz"))]
    srcs = sorted(srcs, key=len)[:3]
    for i in range(18):
        first, rest = srcs[i % 3].split(b"\n", 1)
        parts = first.split(b" ")
        parts[2] = str(2_000_000 + i).encode()
        d = root / f"job{i:03d}"
        d.mkdir()
        (d / "dedicated_log_torch_trace_x.log").write_bytes(b" ".join(parts) + b"\n" + rest)
    ddp = root / "ddp"
    ddp.mkdir()
    for p in sorted((SAMPLES / "ddp_2rank" / "trace").glob("*.log.gz")):
        (ddp / p.name.removesuffix(".gz")).write_bytes(gzip.decompress(p.read_bytes()))
    return root


@pytest.fixture(scope="module")
def serial(many_runs: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    wh = str(tmp_path_factory.mktemp("serial") / "wh")
    res = pt2logs.ingest([str(many_runs)], wh, engine=Engine())
    assert res.runs_new == 19 and res.files == 20
    return wh


def _pool(monkeypatch: pytest.MonkeyPatch) -> local.ProcessPoolEngine:
    monkeypatch.setattr(local, "MIN_POOL_BYTES", 0)  # these runs are small: use the pool anyway
    return local.ProcessPoolEngine(2)


def _all_rows(wh: str) -> dict[str, list[tuple]]:
    """Every table's live rows, sorted, without the columns that differ between equivalent ingests
    (tests.conftest.table_rows, with one connection for all the tables)."""
    from pt2logs.query.views import arrow_table

    con = pt2logs.connect(wh)
    out = {}
    for t in TABLES:
        cols = [
            c
            for c in arrow_table(con, f'SELECT * FROM "{t}" LIMIT 0').schema.names
            if c not in DROP
        ]
        out[t] = sorted(
            con.execute(
                f'SELECT {", ".join(chr(34) + c + chr(34) for c in cols)} FROM "{t}"'
            ).fetchall(),
            key=repr,
        )
    con.close()
    return out


def _parquet(wh: str, table: str) -> list[str]:
    return sorted(p.name for p in Path(wh, table).rglob("*.parquet"))


def test_pool_rows_equal_one_process(many_runs, serial, tmp_path, monkeypatch):
    wh = str(tmp_path / "pool")
    steps: list[int] = []
    res = pt2logs.ingest(
        [str(many_runs)],
        wh,
        engine=_pool(monkeypatch),
        progress=lambda ev, info: steps.append(1) if ev == "file" else None,
    )
    assert (res.runs_new, res.files, len(steps)) == (19, 20, 20)
    got, want = _all_rows(wh), _all_rows(serial)
    for t in TABLES:
        assert got[t] == want[t], t
    assert (
        sum(map(len, got.values())) > 10_000
    )  # real rows were compared (events, phases, metrics...)
    # both workers parsed, each into one writer for the whole transaction: one file per table per worker
    events = _parquet(wh, "events")
    assert len(events) == 2 and {n.split("-")[-2] for n in events} == {"w0", "w1"}, events


def test_one_process_writes_one_file_per_table(serial):
    assert len(_parquet(serial, "events")) == 1


def test_chunks_are_largest_first_and_cover_every_task(many_runs):
    tasks = plan.tasks(discover([str(many_runs)]).runs, 2)
    chunks = plan.chunks(tasks, 2)
    flat = [t for c in chunks for t in c]
    assert sorted(t.url for t in flat) == sorted(t.url for t in tasks)
    sizes = [t.nbytes for t in flat]
    assert sizes == sorted(sizes, reverse=True)
    assert len(chunks) > 4  # several per worker: the pool test above hands them out one by one
    assert plan.chunks(tasks, 1) == [
        [t] for t in tasks
    ]  # one process: each file its own progress step


def _boom(info, task, writer):
    raise OSError(28, "No space left on device")


def _die(info, task, writer):
    os._exit(3)


@pytest.mark.parametrize("fault", [_boom, _die], ids=["fails", "dies"])
def test_a_worker_that_fails_costs_its_transaction_only(many_runs, tmp_path, monkeypatch, fault):
    real = local.parse_file

    def parse(info, task, writer):
        return (fault if "job007" in task.url else real)(info, task, writer)

    monkeypatch.setattr(local, "parse_file", parse)  # before the pool forks: its workers have it
    wh = str(tmp_path / "wh")
    eng = _pool(monkeypatch)
    with pytest.raises(
        local.WorkerFailed, match="No space left" if fault is _boom else "ended unexpectedly"
    ):
        pt2logs.ingest([str(many_runs)], wh, engine=eng)
    assert not eng._procs  # the workers were stopped: none writes on for the aborted transaction
    leftovers = [p for p in Path(wh).rglob("*") if p.is_file() and p.suffix in (".parquet", ".tmp")]
    assert leftovers == []
    monkeypatch.setattr(local, "parse_file", real)
    res = pt2logs.ingest(
        [str(many_runs)], wh, engine=_pool(monkeypatch)
    )  # the next ingest does it all
    assert res.runs_new == 19


def test_two_chunks_go_to_two_workers(many_runs, tmp_path, monkeypatch):
    """Two tasks (two runs, or the two pieces of one big trace) are parsed at once, one per worker: the
    first worker must not take both because it may hold two chunks in flight."""
    import shutil

    root = tmp_path / "two"
    for d in sorted(p for p in many_runs.iterdir() if p.is_dir() and len(list(p.iterdir())) == 1)[
        :2
    ]:
        shutil.copytree(d, root / d.name)
    wh = str(tmp_path / "wh")
    engine = _pool(monkeypatch)
    assert len(plan.chunks(plan.tasks(discover([str(root)]).runs, 2), 2)) == 2
    res = pt2logs.ingest([str(root)], wh, engine=engine)
    assert res.runs_new == 2
    events = _parquet(wh, "events")
    assert {n.split("-")[-2] for n in events} == {"w0", "w1"}, events


def test_a_worker_with_no_chunk_left_closes_its_files_while_others_parse(
    many_runs, tmp_path, monkeypatch
):
    """The last Parquet row groups of a worker that has nothing left to parse are written while the other
    workers still parse, not after all of them are done: its files are complete (renamed from .tmp) by the
    time the slow worker's chunk is reported."""
    import shutil
    import time

    root = tmp_path / "two"
    one_file = sorted(p for p in many_runs.iterdir() if p.is_dir() and len(list(p.iterdir())) == 1)[
        :2
    ]
    for d in one_file:
        shutil.copytree(d, root / d.name)
    slow = one_file[0].name
    real = local.parse_file

    def parse(info, task, writer):
        out = real(info, task, writer)
        if slow in task.url:
            time.sleep(1.5)
        return out

    monkeypatch.setattr(local, "parse_file", parse)  # before the pool forks: its workers have it
    wh = tmp_path / "wh"
    seen: dict[str, list[str]] = {}

    def progress(ev, info):
        if ev == "file":
            seen[Path(info["path"]).parent.name] = sorted(
                p.name for p in wh.rglob("events/**/*") if p.is_file()
            )

    res = pt2logs.ingest([str(root)], str(wh), engine=_pool(monkeypatch), progress=progress)
    assert res.runs_new == 2
    fast = one_file[1].name
    assert seen[fast] == [], seen  # reported before any file was closed
    # the fast worker's file, complete; the slow one's rows still in memory (no row group was due)
    assert [n for n in seen[slow] if n.endswith(".parquet")] == seen[slow] and len(
        seen[slow]
    ) == 1, seen


def test_a_small_file_is_parsed_without_forking_a_pool(many_runs, tmp_path, monkeypatch):
    """One local trace below MIN_POOL_BYTES is parsed in this process whatever --jobs says: the pool is
    not forked for it (its fork and its workers' exit were a fixed cost of every one-trace ingest); a
    folder of runs still gets its workers before the ingest opens DuckDB."""
    started: list[str] = []
    real = local.ProcessPoolEngine._start

    def start(self, method):
        started.append(method)
        real(self, method)

    monkeypatch.setattr(local.ProcessPoolEngine, "_start", start)
    one = next(many_runs.glob("job000/*.log"))
    res = pt2logs.ingest([str(one)], str(tmp_path / "wh"), engine=local.ProcessPoolEngine(2))
    assert res.runs_new == 1 and res.errors == 0 and started == []
    res = pt2logs.ingest([str(many_runs)], str(tmp_path / "wh2"), engine=local.ProcessPoolEngine(2))
    assert res.runs_new == 19 and started == ["fork"]

"""A pool forked from a process that holds DuckDB: its workers never touch what they inherited.

A process that ingests through the pool may hold DuckDB databases (a notebook's connections, a test
process, the CLI's runner): each runs a scheduler of threads, and its destructor joins them. A forked
worker has none of those threads, so a database whose last reference the worker drops (cyclic garbage
the parent had not collected yet, collected by the worker's own cyclic collector) crashes the worker in
``pthread_join`` (SIGSEGV inside ``duckdb::TaskScheduler::~TaskScheduler``). The pool freezes the
parent's objects for the collector while it forks: a worker never collects them.
"""

from __future__ import annotations

import gc

import pytest
from tests.conftest import SAMPLES

import pt2logs
from pt2logs.ingestion.engines import local


def _duckdb_garbage() -> None:
    """A database with its threads running, reachable only from a reference cycle: garbage that only
    the cyclic collector frees (as a notebook's failed cell, or a test's traceback, leaves behind)."""
    import duckdb

    con = duckdb.connect()
    con.execute("SELECT sum(i) FROM range(3000000) t(i)").fetchall()  # its scheduler's threads run
    cycle: list = [con]
    cycle.append(cycle)


@pytest.mark.parametrize("attempt", range(4))
def test_pool_workers_survive_duckdb_garbage_of_their_parent(tmp_path, monkeypatch, attempt):
    monkeypatch.setattr(local, "MIN_POOL_BYTES", 0)  # small runs: through the pool all the same
    gc.collect()
    _duckdb_garbage()  # uncollected when the pool forks (the collector is not due yet)
    engine = local.ProcessPoolEngine(2)
    res = pt2logs.ingest(
        [str(SAMPLES)], str(tmp_path / "wh"), engine=engine
    )  # WorkerFailed if one died
    assert res.runs_new == 5 and res.errors == 0
    gc.collect()  # the parent frees the garbage itself, its threads joined: fine here


def test_the_parents_objects_are_collectable_again_after_the_fork():
    """The freeze lasts only while the pool forks: the parent's collector still frees its garbage."""
    import weakref

    class Box:
        pass

    box = Box()
    box.me = box
    ref = weakref.ref(box)
    del box
    engine = local.ProcessPoolEngine(2)
    engine.close()
    gc.collect()
    assert ref() is None and gc.get_freeze_count() == 0


PROBE = """
import os, sys
seen = []
def before_fork():
    names = []
    for t in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{t}/comm") as f:
            names.append(f.read().strip())
    seen.append(sorted(names))
os.register_at_fork(before=before_fork)
from pt2logs.cli import main
sys.argv = ["pt2logs", "ingest", sys.argv[1], "-w", sys.argv[2], "-q", "-j", "2", "--force"]
try:
    main()
finally:
    sys.stderr.write("FORKS %r\\n" % seen)
"""


@pytest.mark.views_file
@pytest.mark.skipif(
    not __import__("os").path.isdir("/proc/self/task"), reason="threads listed by /proc (Linux)"
)
def test_the_cli_forks_its_pool_before_it_starts_any_thread(tmp_path):
    """`pt2logs ingest` forks its workers while its process runs no thread but the main one (and
    jemalloc's background thread, which jemalloc's own fork handlers make safe): before the ingest opens
    DuckDB (committed state; its scheduler's threads) or starts the views-file thread. Threads of the
    parent hold locks a forked child would inherit held, with no thread to release them."""
    import ast
    import os
    import subprocess
    import sys

    wh = str(tmp_path / "wh")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop(
        "PT2LOGS_DUCKDB_THREADS", None
    )  # DuckDB's own threads, as a user's (the suite's 1 starts none)
    for _ in range(2):  # a new warehouse, then one with a commit (its state read through DuckDB)
        r = subprocess.run(
            [sys.executable, "-c", PROBE, str(SAMPLES), wh], env=env, capture_output=True, text=True
        )
        assert r.returncode == 0, r.stderr
        forks = ast.literal_eval(r.stderr.rsplit("FORKS ", 1)[1])
        assert len(forks) == 2, forks  # one per worker
        for names in forks:
            others = [n for n in names if n != "jemalloc_bg_thd"]
            assert len(others) == 1, (
                names
            )  # the main thread alone: Python and DuckDB threads are named like it

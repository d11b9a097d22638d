"""Shared test helpers: where the real fixtures are, and small warehouse utilities."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("PT2LOGS_FIXTURES", ROOT.parent / "shared" / "fixtures"))
SAMPLES = ROOT / "sample_traces"


def fixture_path(*parts: str) -> Path:
    p = FIXTURES.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"fixture {p} not available (set PT2LOGS_FIXTURES)")
    return p


@pytest.fixture(scope="session", autouse=True)
def _session_root(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The folder every process of this test session shares (xdist workers: their basetemp's parent),
    in the environment: tests import this file as ``tests.conftest``, another module than pytest's."""
    base = tmp_path_factory.getbasetemp()
    os.environ["PT2LOGS_TEST_SESSION_ROOT"] = str(
        base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    )
    # the snapshot catalogs every connection of the session attaches (pt2logs.query.catalog), shared by
    # the workers and the CLI processes tests start; never the user's own cache folder (PT2LOGS_VIEWS_CACHE=0
    # in the environment: every connection makes its catalog in memory)
    os.environ.setdefault(
        "PT2LOGS_VIEWS_CACHE", os.path.join(os.environ["PT2LOGS_TEST_SESSION_ROOT"], "views_cache")
    )


def shared_dir(name: str, make: Callable[[Path], None]) -> Path:
    """``root/name``, filled by ``make(folder)`` once per test session and shared by every xdist worker
    (the others wait on a lock meanwhile): for real captures several test files read, e.g. a
    torch.compile run. Left in pytest's temporary folder (pytest keeps the last three sessions')."""
    root = Path(os.environ["PT2LOGS_TEST_SESSION_ROOT"])
    folder = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / f"{name}.done").exists():
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (root / f"{name}.done").touch()
    return folder


@pytest.fixture(scope="session")
def sample_ingest(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    """The bundled sample traces ingested once per session: (warehouse, IngestResult). Tests only read it."""
    import pt2logs

    wh = str(tmp_path_factory.mktemp("samples") / "wh")
    return wh, pt2logs.ingest([str(SAMPLES)], wh)


@pytest.fixture(scope="session")
def sample_wh(sample_ingest: tuple) -> str:
    return sample_ingest[0]


@pytest.fixture
def wh(tmp_path: Path) -> str:
    return str(tmp_path / "wh")


def table_rows(
    warehouse: str, table: str, drop: tuple[str, ...] = ("txn", "ingest_date")
) -> list[tuple]:
    """All live rows of a table, without the columns that differ between equivalent ingests, sorted."""
    return tables_rows(warehouse, {table: drop})[table]


def tables_rows(warehouse: str, drops: dict[str, tuple[str, ...]]) -> dict[str, list[tuple]]:
    """``table_rows`` of each table in ``drops`` (table -> columns to drop), over one connection: a
    connection lists the warehouse and makes a view per table (about a second on a busy machine), so a
    whole-warehouse snapshot made with one connection per table cost half a minute. Every query reads
    the connection's one snapshot (``con.execute``, not ``arrow_table``: that one takes a new snapshot
    once the old one is half a grace period old, and tests that set PT2LOGS_GC_GRACE_S=0 for their
    writers made one per query: 7 CPU s per whole-warehouse snapshot instead of 1)."""
    import pt2logs

    con = pt2logs.connect(warehouse)
    try:
        out = {}
        for table, drop in drops.items():
            cols = [
                d[0]
                for d in con.execute(f'SELECT * FROM "{table}" LIMIT 0').description
                if d[0] not in drop
            ]
            sel = ", ".join(f'"{c}"' for c in cols)
            out[table] = sorted(con.execute(f'SELECT {sel} FROM "{table}"').fetchall(), key=repr)
        return out
    finally:
        con.close()


def scalar(warehouse: str | Path, sql: str) -> object:
    """The one value ``sql`` gives over a fresh connection to ``warehouse``."""
    import pt2logs

    con = pt2logs.connect(str(warehouse))
    try:
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()


# ----------------------------------------------------------------------------- how xdist spreads the suite
# (pyproject: --dist loadfile --no-loadscope-reorder). Each file runs whole on one worker (its module
# fixtures made once); the wall time is bounded by the longest file a worker takes, and by files that
# start last. xdist's default reorder sent files by test count, so a file of a few long tests started
# late: the longest files go first now, then the others in collection order. (--dist loadgroup would let
# single long tests be spread, but with pytest 9 xdist 3.8's group suffix on the nodeid is lost: it
# behaves as --dist load, and every worker made every session fixture again.)

#: files that take longest, longest first (CPU seconds measured one file at a time with -p no:xdist on a
#: loaded 2-core machine, 2026-11-27; the suite is CPU-bound: its wall time is about its CPU time / 2)
LONGEST = (
    "tests/test_outcomes.py",  # 2-rank torchrun jobs (76 CPU s setup), a deadlock stopped after 68 s of silence
    "tests/test_s3_readers.py",  # readers re-snapshot on moto while a writer commits (70-85 CPU s)
    "tests/test_two_installs.py",  # three torch.compile scenarios (60 CPU s setup)
    "tests/test_crash_safety.py",  # 10 kill points (2-6 CPU s each), readers beside compactions
    "tests/test_s3_lease.py",  # three writers on moto, 11-17 CPU s each, lease waits of 2-6 s
    "tests/test_damaged_inputs.py",  # every command on 54 damaged runs
    "tests/test_cache_misses.py",  # three torch runs (42 CPU s)
    "tests/test_advice.py",  # a torch run (40 CPU s with its tests)
    "tests/test_sources_agree.py",  # makes real_run (28 CPU s), which 4 other files read later
    "tests/test_payload_store.py",  # kill points of ingest and compact (68 CPU s)
    "tests/test_warehouse.py",  # three ingests killed and run again
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):
        return  # one process (-p no:xdist, -n 0): the files' own order

    def rank(nodeid: str) -> int:
        return next((i for i, p in enumerate(LONGEST) if nodeid.startswith(p)), len(LONGEST))

    order = {id(item): i for i, item in enumerate(items)}
    items.sort(key=lambda item: (rank(item.nodeid), order[id(item)]))

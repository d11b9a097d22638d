"""Shared test helpers: where the real fixtures are, and small warehouse utilities."""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Bytecode is cached (in __pycache__/, git-ignored) even where the environment says not to
# (PYTHONDONTWRITEBYTECODE): without it each test process compiled every test module's assertion
# rewrite again (8.3 -> 4.2 CPU s to collect the suite, per xdist worker) and each Python process a
# test starts (`pt2logs` commands, writers, torch jobs) compiled the pt2logs modules it imports.
if sys.dont_write_bytecode or "PYTHONDONTWRITEBYTECODE" in os.environ:
    sys.dont_write_bytecode = False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# One DuckDB thread a connection in every process of the suite (its workers, the commands and writers it
# starts; PT2LOGS_DUCKDB_THREADS, pt2logs.query.views): a test process per core already keeps every core busy,
# and each of the suite's thousands of small connections started a thread pool its queries' work was split
# over (the suite's CPU and wall: bench/RESULTS.md "The test suite's time"). A value set outside is kept.
os.environ.setdefault("PT2LOGS_DUCKDB_THREADS", "1")
# No views file (pt2logs.duckdb, for the DuckDB CLI; PT2LOGS_VIEWS_FILE, pt2logs.ingestion.views_file): pt2logs
# never reads it, and the suite's ~500 ingests into new warehouses each bound its ~90 statements (~0.18 CPU s).
# The tests about it are marked ``views_file`` (:func:`_marked`); the bundled samples' warehouse has it.
os.environ.setdefault("PT2LOGS_VIEWS_FILE", "0")
# Nothing kept (PT2LOGS_OUTCOME_CACHE=0, pt2logs.query.kept_rows): a library ingest decided and kept its runs'
# outcomes, advice items and facts at every commit (~0.45 CPU s, half of a one-run ingest's CPU; the CLI leaves
# it to a process of its own), and the commands kept a run's answers; every answer is then asked of the rules,
# as for a warehouse without them. That the kept rows and answers are the rules' own, read instead of asked,
# written anew when damaged, is what the tests marked ``kept_rows`` check (:func:`_marked`); the samples'
# warehouse (sample_ingest) and the damaged corpus keep theirs (bench/RESULTS.md "The suite without the kept rows").
os.environ.setdefault("PT2LOGS_OUTCOME_CACHE", "0")

FIXTURES = Path(os.environ.get("PT2LOGS_FIXTURES", ROOT.parent / "shared" / "fixtures"))
SAMPLES = ROOT / "sample_traces"


#: for modules that run torch in subprocesses: skipped where torch is not installed, without importing it
#: (``pytest.importorskip("torch")`` at module level imported torch into every test process at
#: collection: 1.4 CPU s each, and its memory)
needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed"
)


def fixture_path(*parts: str) -> Path:
    p = FIXTURES.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"fixture {p} not available (set PT2LOGS_FIXTURES)")
    return p


def gpu_trace_head(name: str = "graph_breaks", fraction: float = 0.4) -> bytes:
    """The first ``fraction`` of a real GPU trace's bytes, up to a record's start: the log of the same job
    had it been stopped there (graph_breaks': 3.2 of 8.1 MB, 887 of its 2,183 records, 6 of its 8 frames,
    7 of its 15 compiles, and every kind of record the whole trace holds: a quarter lacked four). For
    tests whose property does not depend on the log's size (a log that grows, payloads shared, a writer
    killed or paused): an ingest of its first 4 MB into moto cost 2 CPU s."""
    data = next(fixture_path("gpu", name, "trace").glob("*.log")).read_bytes()
    return data[: data.index(b"\nV", int(len(data) * fraction)) + 1]


def half_record(data: bytes) -> int:
    """A record boundary in the middle of a trace's bytes: where a log that is still growing was read."""
    return data.index(b"\nV", len(data) // 2) + 1


@pytest.fixture(scope="session", autouse=True)
def _session_root(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The folder every process of this test session shares (xdist workers: their basetemp's parent),
    in the environment: tests import this file as ``tests.conftest``, another module than pytest's.
    Then the real captures the collected tests read start in the background (:data:`BACKGROUND`)."""
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
    _start_background({item.nodeid.split("::")[0] for item in request.session.items})


def shared_dir(name: str, make: Callable[[Path], None]) -> Path:
    """``root/name``, filled by ``make(folder)`` once per test session and shared by every xdist worker
    (the others wait on a lock meanwhile): for real captures several test files read, e.g. a
    torch.compile run. Left in pytest's temporary folder (pytest keeps the last three sessions')."""
    folder = _make_once(name, make, wait=True)
    assert folder is not None
    return folder


def _make_once(name: str, make: Callable[[Path], None], wait: bool) -> Path | None:
    """``shared_dir``'s work; without ``wait``, None at once when another thread or process is making it."""
    root = Path(os.environ["PT2LOGS_TEST_SESSION_ROOT"])
    folder = root / name
    with open(root / f"{name}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return None
        if not (root / f"{name}.done").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (root / f"{name}.done").touch()
    return folder


#: inductor on CPU probes which vector instruction sets the compiler builds and loads: a C++ build and
#: a Python that loads it per set, in each process whose inductor cache folder is new (every capture
#: makes a fresh one): 5.6 of a small inductor run's 12 CPU s. Where the probe picks the same set as
#: the CPU's flags (checked once per session), the torch processes tests start skip it
#: (TORCHINDUCTOR_VEC_ISA_OK=1: the same generated code).
_VEC_ISA_PROBE = """
from torch._inductor import config, cpu_vec_isa as v
probed = [str(i) for i in v.valid_vec_isa_list()]
v.valid_vec_isa_list.cache_clear()
config.cpp.vec_isa_ok = True
forced = [str(i) for i in v.valid_vec_isa_list()]
print(probed[:1] == forced[:1])
"""


def _probe_vec_isa(folder: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHINDUCTOR_")}
    env["TORCHINDUCTOR_CACHE_DIR"] = str(folder / "cache")
    try:  # any failure (another torch, a hung compiler): the torch processes keep their own probe
        out = subprocess.run(
            [sys.executable, "-c", _VEC_ISA_PROBE],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        return
    if out.stdout.strip() == "True":
        (folder / "same").touch()


def torch_env() -> dict[str, str]:
    """Environment variables for the torch processes tests start (:data:`_VEC_ISA_PROBE`); none
    outside a test session or without torch."""
    if "PT2LOGS_TEST_SESSION_ROOT" not in os.environ or importlib.util.find_spec("torch") is None:
        return {}
    same = (shared_dir("vec_isa", _probe_vec_isa) / "same").exists()
    return {"TORCHINDUCTOR_VEC_ISA_OK": "1"} if same else {}


# ----------------------------------------------------------------------------- real captures in the background
#: the real torch runs (subprocesses) test files read through ``shared_dir(name, maker)``: name ->
#: (maker as "module:function", the files that read it). A session that collected one of those files
#: makes them from its start in one background process (started by one test process), in this order
#: (the order of their readers in :data:`LAST`, so that on a busy machine, where the background lags,
#: the first files of LAST find theirs made first; the outcome jobs' waits, 20 s in a collective timeout
#: and 68 s in a deadlock's silence, overlap the other files wherever they come), while both processes
#: run other tests: their CPU and their waits overlap the rest of the suite instead of stopping a process
#: for minutes (about 163 CPU s in all, measured one after the other on 2026-11-27: outcome_jobs 49,
#: two_installs 36, event_jobs 27, cache_runs 24, real_run 8, advice_run 5, shapes_run 5, and the
#: vector-ISA probe of :func:`torch_env` 9, once; 197 before that). A test that needs one
#: before it is made waits on its lock, or makes it itself if the thread has not come to it yet; a maker
#: that fails leaves no ``.done``, and the test's own call runs it again, in the test, where the failure
#: shows.
BACKGROUND = {
    "real_run": (
        "tests.test_sources_agree:_make_real_run",
        (
            "tests/test_sources_agree.py",
            "tests/test_bundle.py",
            "tests/readers/test_tlparse_dir.py",
            "tests/readers/test_torch_logs.py",
        ),
    ),
    "advice_run": ("tests.test_advice:capture", ("tests/test_advice.py",)),
    "outcome_jobs": ("tests.outcome_jobs:make", ("tests/test_outcomes.py",)),
    "event_jobs": ("tests.event_jobs:make", ("tests/test_event_families.py",)),
    "shapes_run": ("tests.test_dynamic_shapes:_run", ("tests/test_dynamic_shapes.py",)),
    "cache_runs": ("tests.cache_runs:generate", ("tests/test_cache_misses.py",)),
    "two_installs": ("tests.test_two_installs:capture", ("tests/test_two_installs.py",)),
}
_runner: list = []  # the background process and the lock it holds, in the test process that started it


def maker(name: str) -> Callable[[Path], None]:
    """The function that makes the capture ``name`` (:data:`BACKGROUND`)."""
    module, func = BACKGROUND[name][0].split(":")
    return getattr(importlib.import_module(module), func)


def make_in_background(names: list[str]) -> None:
    """The background process: each capture in turn, unless a test process is making it already."""
    for name in names:
        # a failure leaves no .done: the test's own shared_dir call runs it again, and reports it
        with contextlib.suppress(BaseException):
            _make_once(name, maker(name), wait=False)


def _start_background(files: set[str]) -> None:
    names = [n for n, (_, readers) in BACKGROUND.items() if files & set(readers)]
    if not names:
        return
    root = Path(os.environ["PT2LOGS_TEST_SESSION_ROOT"])
    lock = open(root / "background.lock", "w")  # noqa: SIM115 - held for the session
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        return  # another test process started it
    path = os.pathsep.join([str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")])
    with open(root / "background.log", "wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys; from tests.conftest import make_in_background; "
                "make_in_background(sys.argv[1:])",
                *names,
            ],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": path},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its torch runs are stopped with it on an interrupt
        )
    _runner.extend((proc, lock))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The process that started the background captures ends after them (another test process may
    wait for one), or stops them on an interrupt."""
    if _runner:
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(_runner[0].pid, signal.SIGKILL)
        _runner[0].wait()


@pytest.fixture(scope="session")
def sample_ingest(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    """The bundled sample traces ingested once per session: (warehouse, IngestResult). Tests only read it."""
    import pt2logs

    wh = str(tmp_path_factory.mktemp("samples") / "wh")
    # (tests/cli/test_golden.py reads its views file; the tests marked kept_rows its kept rows, whichever test
    # process made it first)
    with views_file_on(), kept_rows_on():
        return wh, pt2logs.ingest([str(SAMPLES)], wh)


@contextlib.contextmanager
def views_file_on() -> Iterator[None]:
    """Ingests write the views file meanwhile, as they do outside the suite (PT2LOGS_VIEWS_FILE)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PT2LOGS_VIEWS_FILE", "1")
        yield


@contextlib.contextmanager
def kept_rows_on() -> Iterator[None]:
    """Outcomes, advice items, run facts and a run's answers are kept and read meanwhile, as outside the suite
    (PT2LOGS_OUTCOME_CACHE)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("PT2LOGS_OUTCOME_CACHE", raising=False)
        yield


@contextlib.contextmanager
def _when_marked(request: pytest.FixtureRequest) -> Iterator[None]:
    """The settings the node's markers ask for (``kept_rows``, ``views_file``), for as long as it runs."""
    with contextlib.ExitStack() as stack:
        for marker, settings in (("kept_rows", kept_rows_on), ("views_file", views_file_on)):
            if request.node.get_closest_marker(marker) is not None:
                stack.enter_context(settings())
        yield


@pytest.fixture(scope="module", autouse=True)
def _marked_module(request: pytest.FixtureRequest) -> Iterator[None]:
    """A module marked ``kept_rows`` or ``views_file`` has those settings in its module fixtures too (made before
    any test's own fixtures)."""
    with _when_marked(request):
        yield


@pytest.fixture(autouse=True)
def _marked(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked ``kept_rows`` (about the kept rows and answers: they are kept and read) or ``views_file`` (it
    reads or damages the views file: ingests write it) runs with that setting."""
    with _when_marked(request):
        yield


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


@pytest.fixture
def asked_of_duckdb(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the named queries that reach DuckDB from now on (not answered from kept answers, nor a
    scope's answer of the same question)."""
    from pt2logs.query import queries

    seen: list[str] = []
    run_sql = queries.run_sql

    def spy(con, sql, params=None):
        seen.append(next(q.name for q in queries.load_queries().values() if q.sql == sql))
        return run_sql(con, sql, params)

    monkeypatch.setattr(queries, "run_sql", spy)
    return seen


def settled(warehouse: str | Path, timeout: float = 120.0) -> None:
    """Until no process named by a ``*.<pid>.tmp`` file of ``warehouse`` lives. ``pt2logs ingest`` as a
    program ends without waiting for the views writer it forked (views_file.py), which is marked by
    ``_views_writer.<pid>.tmp`` from its fork until it ends: a file of a live writer is work in
    progress, not a leftover; a test that looks for leftovers right after the program ends waits here."""
    import re
    import time

    import psutil

    pid_tmp = re.compile(r"\.(\d+)\.tmp(\.wal)?$")
    deadline = time.monotonic() + timeout
    while True:
        alive = []
        for p in Path(warehouse).rglob("*.tmp*"):
            m = pid_tmp.search(p.name)
            if not m:
                continue
            try:
                if psutil.Process(int(m.group(1))).status() != psutil.STATUS_ZOMBIE:
                    alive.append(p.name)
            except psutil.Error:
                continue
        if not alive:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"writers still running after {timeout} s: {alive}")
        time.sleep(0.05)


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
# late: the longest files go first now, then the others in collection order, and the files that read a
# background capture (BACKGROUND) last, when it is made. (--dist loadgroup would let single long tests
# be spread, but with pytest 9 xdist 3.8's group suffix on the nodeid is lost: it behaves as --dist
# load, and every worker made every session fixture again.)

#: files that take longest, longest first (measured one file at a time with -n 0 on a loaded 2-core
#: machine, 2026-11-27 08:00-08:40 UTC: CPU seconds, test process and the subprocesses it waited for, and
#: wall seconds; the suite is CPU-bound: its wall time is about its CPU time / 2; * measured so at 14:00
#: UTC, the lease and payload files once they read gpu_trace_head). A file that waits (leases, Ray's
#: start) goes early too: its waits leave the core to the other worker.
LONGEST = (
    "tests/test_damaged_inputs.py",  # every command on 54 damaged runs (87 CPU s*, 163 s wall*)
    "tests/test_s3_lease.py",  # three writers on moto, lease waits of 2-6 s (41 CPU s*, 61 s wall*)
    "tests/test_payload_store.py",  # kill points of ingest and compact (46 CPU s*)
    "tests/test_fleet.py",  # S3 in and out, a Ray engine started (30 CPU s, 114 s wall)
    "tests/test_s3_readers.py",  # readers re-snapshot on moto while a writer commits (37-98 CPU s)
    "tests/test_crash_safety.py",  # 10 kill points (2-6 CPU s each), readers beside compactions
    "tests/test_run_scope.py",  # every run's answers scoped and not (36 CPU s)
    "tests/test_warehouse.py",  # three ingests killed and run again (26 CPU s)
)
#: the files that read a background capture: last, longest first (CPU seconds measured as LONGEST, the
#: captures made beforehand). In a session on a quiet machine every capture is made by the time these
#: start (the background's ~215 CPU s run beside the other files), so the order is the tail's: the
#: shortest files end the session, and neither worker waits long for the other.
LAST = (
    "tests/test_bundle.py",  # 47 CPU s (every fixture run bundled: 17)
    "tests/readers/test_tlparse_dir.py",  # 31
    "tests/test_advice.py",  # 28
    "tests/test_outcomes.py",  # 19: `pt2logs run` commands killed or failing, 6 runs ingested
    "tests/test_event_families.py",  # 14
    "tests/test_dynamic_shapes.py",  # 9
    "tests/test_cache_misses.py",  # 9
    "tests/test_two_installs.py",  # 8
    "tests/test_sources_agree.py",  # 7
    "tests/readers/test_torch_logs.py",  # 2
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):
        return  # one process (-p no:xdist, -n 0): the files' own order

    def rank(nodeid: str) -> int:
        file = nodeid.split("::")[0]
        if file in LONGEST:
            return LONGEST.index(file)
        return len(LONGEST) + (1 + LAST.index(file) if file in LAST else 0)

    order = {id(item): i for i, item in enumerate(items)}
    items.sort(key=lambda item: (rank(item.nodeid), order[id(item)]))


assert {f for _, files in BACKGROUND.values() for f in files} <= set(LAST), (
    "a capture's reader goes LAST"
)

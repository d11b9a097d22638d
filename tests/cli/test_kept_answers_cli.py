"""The CLI keeps the answers about a run (pt2logs.query.answer_keeper): ``pt2logs ingest`` those of a small commit's
runs, in a process it forks once committed (the first command about them reads them); for a run without them (a
library ingest, a larger commit) ``pt2logs summary RUN`` answers as without them, then a process it forked keeps them
and it exits without waiting; the next ``summary`` reads them and prints the same bytes, without importing pyarrow;
a warehouse where they cannot be written keeps none and says nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.conftest import SAMPLES

from pt2logs.query import answer_rows, kept_answers, kept_rows

#: the kept rows and answers are what these tests are about (tests/conftest.py: the suite keeps none elsewhere)
pytestmark = pytest.mark.kept_rows

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    return subprocess.run(
        [sys.executable, "-m", "pt2logs", *args], capture_output=True, env=env, timeout=120
    )


def kept_file(wh: Path, timeout: float = 60.0) -> Path:
    """The one kept answers file, once the background process wrote it."""
    folder = wh / kept_answers.FOLDER / kept_answers.key()
    deadline = time.monotonic() + timeout
    while True:
        got = list(folder.glob("*" + kept_rows.SUFFIX))
        if got:
            (path,) = got
            return path
        if time.monotonic() > deadline:
            raise AssertionError(f"no answers kept after {timeout} s")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> Path:
    """The sample run ingested by the library (which keeps no answers: the commands keep them lazily)."""
    from tests.conftest import views_file_on

    import pt2logs

    wh = tmp_path_factory.mktemp("answers") / "wh"
    with (
        views_file_on()
    ):  # as outside the suite: writing it keeps the macros' fills the commands read
        pt2logs.ingest([str(SAMPLES / "recompiles")], str(wh))
    return wh


def test_ingest_keeps_the_answers_of_a_small_commit_and_the_first_command_reads_them(tmp_path):
    """``pt2logs ingest`` of one run: once committed, a process it forked keeps the run's answers (its marker, a
    ``.<pid>.tmp``, there before the ingest ends); the first summary prints what it prints with nothing kept."""
    from tests.conftest import settled

    wh = tmp_path / "wh"
    assert cli("ingest", str(SAMPLES / "recompiles"), "-w", str(wh), "-q").returncode == 0
    settled(wh)
    assert not list(wh.glob("*.tmp"))
    kept_file(wh, timeout=1)
    first = cli("summary", "-w", str(wh))
    env = {**os.environ, "PT2LOGS_OUTCOME_CACHE": "0"}
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")
    asked = subprocess.run(
        [sys.executable, "-m", "pt2logs", "summary", "-w", str(wh)], capture_output=True, env=env
    )
    assert (first.returncode, first.stdout) == (asked.returncode, asked.stdout) == (0, first.stdout)


def test_summary_keeps_its_answers_after_its_output_and_the_next_reads_them(wh):
    from tests.conftest import settled

    settled(wh)  # (the ingest's views writer)
    assert not (wh / kept_answers.FOLDER).exists()  # an ingest keeps no answers
    first = cli("summary", "recompiles", "-w", str(wh))
    assert first.returncode == 0 and first.stderr == b"", first.stderr
    path = kept_file(wh)
    settled(wh)  # (its .<pid>.tmp renamed)
    second = cli("summary", "recompiles", "-w", str(wh))
    assert (second.returncode, second.stdout, second.stderr) == (0, first.stdout, b"")
    # read, not asked again: an answer edited in the kept file shows
    t = pq.read_table(path)
    rows = t.to_pylist()
    (overview,) = [r for r in rows if r["query"] == "run_overview"]
    table = pa.ipc.open_stream(overview["answer"]).read_all()
    assert table.column("run").to_pylist() == ["recompiles"]
    renamed = table.set_column(
        table.schema.get_field_index("run"),
        "run",
        pa.array(["edited"], table.schema.field("run").type),
    )
    overview["answer"] = kept_answers.ipc(renamed)
    overview["rows"] = answer_rows.encode(renamed)  # (what the CLI prints from: no pyarrow)
    pq.write_table(pa.Table.from_pylist(rows, schema=t.schema), path)
    edited = cli("summary", "recompiles", "-w", str(wh))
    assert edited.returncode == 0 and b"edited" in edited.stdout and b"edited" not in first.stdout
    pq.write_table(t, path)  # (as kept)
    assert cli("summary", "recompiles", "-w", str(wh)).stdout == first.stdout


def test_a_warehouse_where_answers_cannot_be_written_fails_nothing(tmp_path):
    """Their folder taken by a file (root writes anywhere: a read-only folder would not stop it): the commands answer
    as always, say nothing more, and nothing is kept."""
    from tests.conftest import settled

    import pt2logs

    wh = tmp_path / "wh"
    pt2logs.ingest([str(SAMPLES / "graph_breaks")], str(wh))  # (the library's: keeps none itself)
    (wh / kept_answers.FOLDER).write_bytes(b"not a folder")
    outs = []
    for cmd in ("summary", "ranks", "advise", "summary"):
        r = cli(cmd, "-w", str(wh))
        assert r.returncode == 0 and r.stderr == b"", (cmd, r.stderr)
        outs.append(r.stdout)
    assert outs[0] == outs[3]
    time.sleep(1)  # (the background processes' time to fail)
    settled(wh)
    assert (wh / kept_answers.FOLDER).read_bytes() == b"not a folder"
    assert not list(wh.rglob("*.tmp"))


def test_on_an_object_store_the_answers_are_kept_the_same_way():
    """s3:// (a local moto server): the forked process makes a filesystem of its own (s3fs's does not survive a
    fork), writes the answers as one object, and the next summary reads them."""
    from tests.s3server import moto_s3

    with moto_s3() as fs:
        fs.mkdir("answers")
        wh = "s3://answers/wh"
        assert cli("ingest", str(SAMPLES / "recompiles"), "-w", wh, "-q").returncode == 0
        first = cli("summary", "-w", wh)
        assert first.returncode == 0 and first.stderr == b"", first.stderr
        folder = f"answers/wh/{kept_answers.FOLDER}/{kept_answers.key()}"
        deadline = time.monotonic() + 60
        while not [
            p
            for p in (fs.ls(folder, refresh=True) if fs.exists(folder) else [])
            if p.endswith(".pq")
        ]:
            assert time.monotonic() < deadline, "no answers kept"
            time.sleep(0.2)
            fs.invalidate_cache()
        second = cli("summary", "-w", wh)
        assert (second.returncode, second.stdout, second.stderr) == (0, first.stdout, b"")


def test_a_host_process_running_the_command_forks_nothing(tmp_path, monkeypatch):
    """The keeper is forked by the ``pt2logs`` program only: a command run inside another process (a test's
    CliRunner, a notebook calling ``main()``) never forks it from its host (DuckDB's threads, the host's
    state), and keeps nothing."""
    from click.testing import CliRunner

    import pt2logs
    from pt2logs.cli import main

    w = tmp_path / "wh"
    pt2logs.ingest([str(SAMPLES / "recompiles")], str(w))
    forks: list[int] = []

    def no_fork() -> int:
        forks.append(1)
        raise OSError("a host process must not fork the keeper")

    monkeypatch.setattr(os, "fork", no_fork)
    res = CliRunner().invoke(main, ["summary", "-w", str(w)])
    assert res.exit_code == 0, res.output
    assert forks == [] and not (w / kept_answers.FOLDER).exists()


#: a fresh interpreter runs one command through the CLI's group, then says which heavy libraries it imported
PROBE = """
import json, sys
from pt2logs.cli import main
main(sys.argv[1:], prog_name="pt2logs", standalone_mode=False)
sys.stdout.flush()
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"pyarrow", "numpy", "polars", "pandas"})
sys.stderr.write("HEAVY " + json.dumps(heavy) + "\\n")
"""


def test_the_commands_about_a_kept_run_print_the_same_without_pyarrow(wh):
    """summary, ranks and advise about a run whose answers are kept read them as rows (pt2logs.query.answer_rows):
    the process imports neither pyarrow nor numpy (~0.08 CPU s, two thirds of the floor), and prints the bytes the
    same command prints when every answer is asked of DuckDB."""
    from tests.conftest import settled

    from pt2logs.query.answer_keeper import keep_answers
    from pt2logs.store.warehouse import Warehouse

    settled(wh)
    keep_answers(Warehouse(str(wh)))
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    for cmd in (["summary", "recompiles"], ["ranks", "recompiles"], ["advise", "recompiles"]):
        p = subprocess.run(
            [sys.executable, "-c", PROBE, *cmd, "-w", str(wh)],
            capture_output=True,
            env=env,
            timeout=120,
        )
        assert p.returncode == 0, p.stderr
        assert p.stderr.decode().splitlines()[-1] == "HEAVY []", (cmd, p.stderr)
        asked = subprocess.run(
            [sys.executable, "-m", "pt2logs", *cmd, "-w", str(wh)],
            capture_output=True,
            env={**env, "PT2LOGS_OUTCOME_CACHE": "0"},
            timeout=120,
        )
        assert (asked.returncode, asked.stdout) == (0, p.stdout), cmd

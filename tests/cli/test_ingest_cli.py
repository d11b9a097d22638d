"""`pt2logs ingest` as a user runs it."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner
from tests.conftest import SAMPLES, fixture_path

from pt2logs.cli import main


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_nonexistent_path_is_a_usage_error(wh):
    r = run("ingest", "/no/such/place", "-w", wh)
    assert r.exit_code == 2
    assert "/no/such/place: no such file or directory" in r.output


def test_ingest_the_samples_prints_a_summary(wh):
    r = run("ingest", str(SAMPLES), "-w", wh)
    assert r.exit_code == 0, r.output
    first = r.output.splitlines()[0]
    assert first.startswith("5 runs ingested") and "0 errors" in first and "MB/s" in first
    again = run("ingest", str(SAMPLES), "-w", wh, "--json")
    d = json.loads(again.output[again.output.index("{") :])
    assert d["runs_unchanged"] == 5 and d["runs_new"] == 0 and d["events"] == 0


def test_strict_fails_on_bad_input_and_errors_are_listed(wh, tmp_path):
    src = fixture_path("tlparse", "simple_corrupted_json.log")
    assert run("ingest", str(src), "-w", wh).exit_code == 0
    r = run("ingest", str(src), "-w", str(tmp_path / "other"), "--strict")
    assert r.exit_code == 1
    assert "1 errors" in r.output


def test_non_log_files_are_skipped_and_reported(wh, tmp_path):
    d = tmp_path / "mixed"
    d.mkdir()
    shutil.copy(fixture_path("tlparse", "simple.log"), d / "simple.log")
    (d / "notes.txt").write_text("hello\n")
    (d / "empty.log").write_text("")
    r = run("ingest", str(d), "-w", wh)
    assert r.exit_code == 0
    assert "1 run ingested" in r.output
    assert "notes.txt: not a recognised log format" in r.output
    assert "empty.log: empty file" in r.output


def test_tags_and_run_id(wh):
    src = fixture_path("tlparse", "multi_rank_logs")
    r = run(
        "ingest",
        str(src),
        "-w",
        wh,
        "--run-id",
        "job42",
        "--tag",
        "model=llama",
        "--tag",
        "commit=abc123",
    )
    assert r.exit_code == 0, r.output
    import pt2logs

    con = pt2logs.connect(wh)
    assert con.execute("SELECT run_id, tags->>'model', n_ranks FROM runs").fetchall() == [
        ("job42", "llama", 4)
    ]
    assert run("ingest", str(src), "-w", wh, "--tag", "oops").exit_code == 2


def test_several_files_under_one_run_id_are_one_run(wh):
    logs = sorted(str(p) for p in fixture_path("tlparse", "multi_rank_logs").glob("*.log"))
    r = run("ingest", *logs, "-w", wh, "--run-id", "job42", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output[r.output.index("{") :])
    assert out["runs_new"] == 1 and out["run_ids"] == ["job42"] and out["files"] == 4
    import pt2logs

    con = pt2logs.connect(wh)
    assert con.execute("SELECT run_id, name, n_ranks, n_files FROM runs").fetchall() == [
        ("job42", "multi_rank_logs", 4, 4)
    ]


def test_compressed_inputs(tmp_path, wh):
    import bz2
    import gzip

    import zstandard

    raw = fixture_path("tlparse", "simple.log").read_bytes()
    d = tmp_path / "c"
    d.mkdir()
    (d / "a.log.gz").write_bytes(gzip.compress(raw))
    (d / "b.log.zst").write_bytes(zstandard.ZstdCompressor().compress(raw))
    (d / "c.log.bz2").write_bytes(bz2.compress(raw))
    (d / "d.log").write_bytes(raw)
    r = run("ingest", str(d), "-w", wh, "--json")
    out = json.loads(r.output[r.output.index("{") :])
    # same content, four names: four runs (the name is part of a run's identity), identical rows
    assert out["runs_new"] == 4 and out["errors"] == 0
    import pt2logs

    con = pt2logs.connect(wh)
    counts = con.execute(
        "SELECT r.name, count(*) FROM events e JOIN runs r USING (run_id) GROUP BY 1 ORDER BY 1"
    ).fetchall()
    assert {c for _, c in counts} == {76}
    comp = dict(con.execute("SELECT relpath, compression FROM files").fetchall())
    assert comp == {"a.log.gz": "gzip", "b.log.zst": "zstd", "c.log.bz2": "bz2", "d.log": "none"}


@pytest.mark.views_file
def test_a_views_file_that_cannot_be_written_does_not_fail_a_committed_ingest(tmp_path):
    """pt2logs.duckdb is a convenience for the DuckDB CLI, written after the data is committed: when it
    cannot be written (here a folder stands in its place) the ingest still succeeds and says so."""
    wh = tmp_path / "wh"
    (wh / "pt2logs.duckdb").mkdir(parents=True)
    (wh / "pt2logs.duckdb" / "keep").write_text("x")
    res = CliRunner().invoke(main, ["ingest", str(SAMPLES / "recompiles"), "-w", str(wh)])
    assert res.exit_code == 0, res.output
    assert "note: pt2logs.duckdb" in res.output and "committed" in res.output
    assert CliRunner().invoke(
        main, ["query", "SELECT count(*) AS n FROM runs", "-w", str(wh), "-f", "csv"]
    ).output.split() == ["n", "1"]


def test_the_ingest_program_ends_without_the_interpreters_finalization(tmp_path):
    """`pt2logs ingest` run as the program ends as soon as everything is committed: its output complete
    and flushed, its exit code 0, the warehouse whole, the interpreter's teardown (exit handlers, module
    cleanup) skipped. The same command inside another program (CliRunner above) returns normally."""
    import os
    import subprocess
    import sys

    import pt2logs

    trace = next(fixture_path("gpu/compile_failure/trace").glob("*.log"))
    wh = str(tmp_path / "wh")
    probe = (
        "import atexit, runpy, sys\n"
        "atexit.register(lambda: print('FINALIZED', flush=True))\n"
        f"sys.argv = [{os.path.join(os.path.dirname(pt2logs.__file__), '__main__.py')!r}, 'ingest',"
        f" {str(trace)!r}, '-w', {wh!r}, '--json']\n"
        "runpy.run_module('pt2logs', run_name='__main__', alter_sys=True)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "FINALIZED" not in r.stdout
    assert json.loads(r.stdout)["runs_new"] == 1
    assert pt2logs.connect(wh).execute("SELECT count(*) FROM runs").fetchone()[0] == 1
    inside = run("ingest", str(trace), "-w", wh, "--json")  # not the program: returns to its caller
    assert inside.exit_code == 0 and json.loads(inside.output)["runs_unchanged"] == 1


@pytest.mark.views_file
@pytest.mark.kept_rows
def test_the_ingest_program_leaves_the_views_file_to_a_process_of_its_own(tmp_path):
    """`pt2logs ingest` as the program returns once the data is committed, without DuckDB: the views file
    `pt2logs.duckdb` is written by a process it starts and does not wait for (issue 36: ~0.3 s of CPU off a
    one-trace ingest). The data is readable as soon as the command returns; the file follows, whole, with
    its views and macros, and no temporary file is left."""
    import os
    import subprocess
    import sys
    import time

    import duckdb

    import pt2logs

    trace = next(fixture_path("gpu/compile_failure/trace").glob("*.log"))
    wh = tmp_path / "wh"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pt2logs", "ingest", str(trace), "-w", str(wh)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    imported = {line.split("|")[-1].strip() for line in r.stderr.splitlines() if "|" in line}
    assert "pt2logs.ingestion.commit" in imported  # (the probe sees the ingest's imports)
    assert "duckdb" not in imported and "pt2logs.query.views" not in imported
    assert pt2logs.connect(str(wh)).execute("SELECT count(*) FROM runs").fetchone()[0] == 1
    deadline = time.monotonic() + 120
    while not (wh / "_views.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (wh / "_views.json").exists(), sorted(p.name for p in wh.iterdir())
    con = duckdb.connect(str(wh / "pt2logs.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 1
    assert (
        con.execute("SELECT count(*) FROM selected_runs(NULL, NULL, NULL, NULL)").fetchone()[0] == 1
    )
    con.close()
    from tests.conftest import settled

    settled(wh)  # (the keeper of the run's answers: a small commit's, kept after it)
    assert [p.name for p in wh.iterdir() if ".tmp" in p.name] == []
    # the same process keeps the run's outcome (decided once, before it writes the views file)
    from pt2logs.query import kept_rows
    from pt2logs.store.warehouse import Warehouse

    live = pt2logs.connect(str(wh)).execute("SELECT txn FROM runs").fetchone()[0]
    assert kept_rows.kept_txns(kept_rows.OUTCOMES, Warehouse(str(wh))) == {live}


@pytest.mark.views_file
@pytest.mark.kept_rows
def test_a_pooled_ingest_program_leaves_duckdb_and_fsspec_out_of_its_processes(tmp_path):
    """`pt2logs ingest FOLDER -j 2` as the program (a pool of workers) returns once the data is committed, as a
    one-trace ingest does: the views file and the committed runs' kept outcomes (~1 CPU s of DuckDB after 300
    runs, issue 36) are made by the process it forks and does not wait for: neither the ingest nor its workers
    import DuckDB, nor, for local inputs and warehouse, fsspec (~0.04 CPU s each)."""
    import os
    import subprocess
    import sys

    from tests.conftest import settled

    import pt2logs
    from pt2logs.query import kept_rows
    from pt2logs.store.warehouse import Warehouse

    wh = tmp_path / "wh"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cmd = [sys.executable, "-X", "importtime", "-m", "pt2logs", "ingest", str(SAMPLES)]
    r = subprocess.run(
        [*cmd, "-w", str(wh), "-j", "2", "--json"], capture_output=True, text=True, env=env
    )
    assert r.returncode == 0, r.stderr
    imported = {line.split("|")[-1].strip() for line in r.stderr.splitlines() if "|" in line}
    # (the probe sees the pooled ingest's imports)
    assert "pt2logs.ingestion.engines.local" in imported
    assert "duckdb" not in imported and "pt2logs.query.kept_cache" not in imported
    assert "fsspec" not in imported  # (local inputs and warehouse: pt2logs.store.local_files)
    runs = json.loads(r.stdout)["runs_new"]
    con = pt2logs.connect(str(wh))
    assert runs > 1 and con.execute("SELECT count(*) FROM runs").fetchone()[0] == runs
    live = {t for (t,) in con.execute("SELECT DISTINCT txn FROM runs").fetchall()}
    settled(wh)
    assert (wh / "_views.json").exists()
    assert [p.name for p in wh.iterdir() if ".tmp" in p.name] == []
    assert kept_rows.kept_txns(kept_rows.OUTCOMES, Warehouse(str(wh))) == live


def _wait_for_processes_of(wh: str, timeout: float = 120.0) -> None:
    """Until no process names ``wh`` on its command line (the ingest and the views writer it forked)."""
    import time

    import psutil

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        mine = []
        for p in psutil.process_iter(["cmdline"]):
            try:
                if wh in (p.info["cmdline"] or []) and p.status() != psutil.STATUS_ZOMBIE:
                    mine.append(p)
            except psutil.Error:
                continue
        if not mine:
            return
        time.sleep(0.05)
    raise AssertionError(f"still running: {mine}")


@pytest.mark.views_file
def test_an_ingest_killed_before_its_commit_leaves_no_views_file(tmp_path):
    """The views writer the ingest program forks writes only when told, after the commit: an ingest killed
    before it (here right after its data files) leaves neither the file nor its temporary one, the writer
    ends, and the next ingest commits and writes the file as usual."""
    import os
    import subprocess
    import sys

    import pt2logs

    trace = next(fixture_path("gpu/compile_failure/trace").glob("*.log"))
    wh = str(tmp_path / "wh")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "PT2LOGS_DIE_AFTER": "txn.data"}
    cmd = [sys.executable, "-m", "pt2logs", "ingest", str(trace), "-w", wh, "-q"]
    assert subprocess.run(cmd, capture_output=True, env=env).returncode == 137
    _wait_for_processes_of(wh)
    left = sorted(p.name for p in (tmp_path / "wh").iterdir())
    assert "pt2logs.duckdb" not in left and "_views.json" not in left
    assert [n for n in left if ".tmp" in n] == []
    del env["PT2LOGS_DIE_AFTER"]
    assert subprocess.run(cmd, capture_output=True, env=env).returncode == 0
    _wait_for_processes_of(wh)
    assert (tmp_path / "wh" / "_views.json").exists()
    assert pt2logs.connect(wh).execute("SELECT count(*) FROM runs").fetchone()[0] == 1

"""Run outcomes on real captures: 2-rank torchrun jobs on CPU (torch 2.13, gloo) that hang, raise, get
SIGKILLed or finish, made by tests/outcome_jobs.py once per session, and `pt2logs run` commands that
fail, get killed or never import torch. Each assertion names what the logs show."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests import outcome_jobs as jobs
from tests.conftest import needs_torch, shared_dir

import pt2logs
from pt2logs.cli import main
from pt2logs.query.queries import run_named

pytestmark = [pytest.mark.slow, needs_torch]


@pytest.fixture(scope="session")
def captures(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The jobs, run for real once per session (tests/outcome_jobs.py ``make``, in the background from
    the session's start: tests/conftest.py BACKGROUND), everything ingested into one warehouse: a copy
    of the one the clean job's `pt2logs run` wrote."""
    dest = shared_dir("outcome_jobs", jobs.make)
    ran = json.loads((dest / "ran.json").read_text())
    wh = str(tmp_path_factory.mktemp("outcome_jobs") / "wh")
    assert ran["clean"]["rc"] == 0, (dest / "clean" / "stderr.txt").read_text()[-3000:]
    shutil.copytree(dest / "wh_clean", wh)
    pt2logs.ingest([str(dest / "preempted")], wh)
    for job in ("desync_hang", "rank_raises", "sigkill"):
        assert ran[job]["rc"] == 1, ran[job]  # torchrun's exit status after a failed worker
        pt2logs.ingest([str(dest / job)], wh)
    pt2logs.ingest([str(dest / "deadlock_stopped")], wh)
    return {"dest": dest, "wh": wh, "ran": ran}


def _q(wh: str, name: str, **params) -> list[dict]:
    return run_named(pt2logs.connect(wh), name, params).to_pylist()


def _run(wh: str, run: str) -> dict:
    (row,) = [r for r in _q(wh, "run_outcomes", run_id=run) if r["run"] == run]
    return row


def _ranks(wh: str, run: str) -> dict:
    return {r["rank"]: r for r in _q(wh, "rank_outcomes", run_id=run) if r["run"] == run}


def _line(dest: Path, job: str, file: str, line_no: int) -> str:
    return (dest / job / file).read_text(errors="replace").splitlines()[line_no - 1]


def test_a_desync_that_hangs_until_the_collective_times_out(captures):
    wh, dest = captures["wh"], captures["dest"]
    run = _run(wh, "desync_hang")
    assert run["outcome"] == "hung" and run["root_rank"] == 0
    assert "Timed out waiting 20000ms for recv operation" in run["evidence"]
    assert _line(dest, "desync_hang", run["evidence_file"], run["evidence_line"]) == run["evidence"]
    # rank 0 compiled the all_reduce and waited in it from then on: its trace stops first
    assert run["silent_first_rank"] == 0 and run["silent_s"] >= jobs.GLOO_TIMEOUT_S - 2
    ranks = _ranks(wh, "desync_hang")
    assert {k: r["outcome"] for k, r in ranks.items()} == {0: "hung", 1: "hung"}
    assert ranks[0]["why"] == "timed out in recv (timeout 20 s)"
    # rank 1 waited in its recv: its peer went away, and the launcher ended it (which line comes first is a race)
    assert ranks[1]["why"].startswith("stuck in the same hang")
    assert ranks[1]["evidence_kind"] in (
        "peer_closed",
        "closing_signal",
        "child_failure",
        "worker_exit",
    )
    assert ranks[0]["silence_order"] == 1 and ranks[0]["last_event_at"] < ranks[1]["last_event_at"]
    (div,) = _q(wh, "first_divergence", run_id="desync_hang")
    assert (div["step"], div["what"], div["compile_id"]) == (1, "collectives", "0/0")
    assert (div["ranks_a"], div["side_a"], div["ranks_b"], div["side_b"]) == (
        [0],
        "all_reduce",
        [1],
        "none",
    )
    assert div["where_a"].startswith("trace/dedicated_log_torch_trace_rank_0_")


def test_ranks_and_summary_say_it_hung(captures, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    wh = captures["wh"]
    out = (
        CliRunner().invoke(main, ["ranks", "desync_hang", "-w", wh], catch_exceptions=False).output
    )
    first = out.splitlines()[0]
    assert "0 of 2" not in first and "hung" in first
    assert "outcome: hung: rank 0: timed out in recv" in out
    assert (
        "first divergence: compile 0/0 (step 1) differs in collectives: rank 0: all_reduce | rank 1: none"
        in out
    )
    out = (
        CliRunner()
        .invoke(main, ["summary", "desync_hang", "-w", wh], catch_exceptions=False)
        .output
    )
    assert out.splitlines()[1].startswith("  outcome    hung: rank 0: timed out in recv")
    assert "rank 0 went silent first" in out and "First divergence between ranks" in out


def test_a_rank_that_raises(captures):
    wh, dest = captures["wh"], captures["dest"]
    run = _run(wh, "rank_raises")
    assert run["outcome"] == "failed" and run["root_rank"] == 1
    assert run["evidence"] == "[rank1]: RuntimeError: rank 1 gave up: the loss became NaN"
    assert _line(dest, "rank_raises", run["evidence_file"], run["evidence_line"]) == run["evidence"]
    ranks = _ranks(wh, "rank_raises")
    assert ranks[1]["outcome"] == "failed" and "outcome_jobs.py" in ranks[1]["why"]
    # rank 0 was waiting for rank 1: the launcher ended it (or it saw its peer go first)
    assert ranks[0]["outcome"] in ("killed", "failed") and ranks[0]["evidence_kind"] in (
        "closing_signal",
        "child_failure",
        "peer_closed",
    )
    assert not _q(wh, "first_divergence", run_id="rank_raises")


def test_a_rank_killed_with_sigkill(captures):
    wh = captures["wh"]
    run = _run(wh, "sigkill")
    assert run["outcome"] == "killed" and run["root_rank"] == 1 and "SIGKILL" in run["why"]
    assert "failed (exitcode: -9) local_rank: 1" in run["evidence"]
    con = pt2logs.connect(wh)
    table = con.execute("""SELECT e.rank, e.exit_code, e.signal, e.root_cause, e.secondary FROM outcome_evidence e
                           JOIN runs r USING (run_id) WHERE r.name = 'sigkill' AND e.kind = 'child_failure' ORDER BY e.rank""").fetchall()
    assert table == [
        (0, -15, "SIGTERM", False, True),
        (1, -9, "SIGKILL", True, False),
    ]  # ChildFailedError's table
    ranks = _ranks(wh, "sigkill")
    assert ranks[1]["outcome"] == "killed" and ranks[1]["signal"] == "SIGKILL"
    assert ranks[0]["outcome"] in ("killed", "failed")


def test_a_job_stopped_from_outside(captures):
    wh, dest = captures["wh"], captures["dest"]
    assert captures["ran"]["preempted"]["rc"] not in (0, "timeout")
    run = _run(wh, "preempted")
    assert run["outcome"] == "killed" and run["why"].startswith("the job was stopped from outside")
    assert run["evidence"].endswith("Received 15 death signal, shutting down workers")
    assert _line(dest, "preempted", run["evidence_file"], run["evidence_line"]) == run["evidence"]
    ranks = _ranks(wh, "preempted")
    # the stderr's times are Tokyo's (UTC+9): read as UTC they would put the end 9 h after the last event
    assert {r["outcome"] for r in ranks.values()} == {"killed"} and all(
        0 <= r["silent_s"] < 60 for r in ranks.values()
    )
    assert all(r["run_end_from"] == "stderr" for r in ranks.values())
    kinds = [
        k
        for (k,) in pt2logs.connect(wh)
        .execute(
            "SELECT e.kind FROM outcome_evidence e JOIN runs r USING (run_id) WHERE r.name = 'preempted' ORDER BY e.line_no"
        )
        .fetchall()
    ]
    assert (
        kinds[:3] == ["agent_signal", "closing_signal", "closing_signal"]
        and kinds[-1] == "agent_signal"
    )  # ... SignalException


def test_a_clean_job_run_through_pt2logs_run(captures):
    wh = captures["wh"]
    run = _run(wh, "clean job")
    assert (
        run["outcome"] == "completed"
        and run["exit_code"] == 0
        and "torch.distributed.run" in run["command"]
    )
    assert {r["outcome"] for r in _ranks(wh, "clean job").values()} == {"completed"}
    assert not _q(wh, "first_divergence", run_id="clean job")


def test_a_trace_folder_alone_gives_the_gaps_and_the_divergence(captures, tmp_path):
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(captures["dest"] / "desync_hang" / "trace")], wh)
    (run,) = _q(wh, "run_outcomes")
    assert (
        run["outcome"] == "unknown"
        and run["run_end_from"] == "last trace event"
        and run["silent_first_rank"] == 0
    )
    ranks = {r["rank"]: r for r in _q(wh, "rank_outcomes")}
    assert {r["outcome"] for r in ranks.values()} == {"unknown"} and ranks[0]["silent_s"] > ranks[
        1
    ]["silent_s"]
    (div,) = _q(wh, "first_divergence")
    assert div["what"] == "collectives" and div["side_a"] == "all_reduce"


def test_the_run_page_has_the_banner_and_where_each_rank_stopped(captures):
    from pt2logs import dashboard as D

    page = D.build(pt2logs.connect(captures["wh"]), run="desync_hang")
    assert page.banner.level == "bad" and page.banner.title.startswith(
        "Outcome: hung: rank 0: timed out in recv"
    )
    assert any(x.startswith("First divergence: compile 0/0") for x in page.banner.lines)
    card = next(c for c in page.cards if c.key == "rank_ends")
    assert card.spec is not None and card.rows == 4
    html = D.render_html(page, bundle="")
    assert 'id="outcome"' in html and "Rank 1: hung: stuck in the same hang" in html


def test_the_weekly_page_counts_the_runs_that_ended_badly(captures):
    from pt2logs import dashboard as D

    con = pt2logs.connect(captures["wh"])
    outcomes = {r["run"]: r["outcome"] for r in _q(captures["wh"], "run_outcomes")}
    bad = sum(o in ("hung", "killed", "crashed", "failed") for o in outcomes.values())
    card = next(c for c in D.build(con, since="2d").cards if c.key == "run_outcomes_all")
    (row,) = card.data.to_pylist()
    assert row["series"] == "all runs" and row["runs"] == len(outcomes) and row["bad"] == bad >= 3
    assert row["hung"] == sum(o == "hung" for o in outcomes.values()) >= 1
    keys = {c.key for c in D.build(con, since="2d", by="model").cards}
    assert "run_outcomes" in keys and "run_outcomes_all" not in keys


# ---------------------------------------------------------------------------- pt2logs run, whatever happens


def _pt2logs_run(wh: str, *cmd: str, name: str | None = None) -> subprocess.CompletedProcess:
    extra = ["--name", name] if name else []
    return subprocess.run(
        [sys.executable, "-m", "pt2logs", "run", "-w", wh, *extra, "--", *cmd],
        capture_output=True,
        text=True,
        timeout=jobs.TIMEOUT_S,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def test_a_command_that_fails_before_compiling_is_still_a_run(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    wh = str(tmp_path / "wh")
    p = _pt2logs_run(
        wh,
        sys.executable,
        "-c",
        "import sys; print('it broke: a b', file=sys.stderr); import no_such_module_xyz",
        name="no torch",
    )
    assert (
        p.returncode == 1
        and "1 run ingested" in p.stdout
        and "not a recognised log format" not in p.stderr
    )
    run = _run(wh, "no torch")
    assert run["outcome"] == "failed" and run["exit_code"] == 1
    assert run["evidence"] == "ModuleNotFoundError: No module named 'no_such_module_xyz'"
    assert run["command"].endswith(
        """-c 'import sys; print('"'"'it broke: a b'"'"', file=sys.stderr); import no_such_module_xyz'"""
    )
    con = pt2logs.connect(wh)
    lines = [m for (m,) in con.execute("SELECT message FROM log_lines ORDER BY line_no").fetchall()]
    assert "it broke: a b" in lines[0] and "ModuleNotFoundError" in lines[-1]
    out = CliRunner().invoke(main, ["summary", "no torch", "-w", wh], catch_exceptions=False).output
    assert "outcome    failed: ModuleNotFoundError" in out
    assert "import no_such_module_xyz': exit code 1 after" in " ".join(
        out.split()
    )  # the command, however wrapped


def test_a_command_killed_mid_run(tmp_path):
    wh = str(tmp_path / "wh")
    code = (
        "import os, signal, torch\nf = torch.compile(lambda x: x.sin() + 1, backend='eager')\nf(torch.randn(4))\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    p = _pt2logs_run(wh, sys.executable, "-c", code, name="killed")
    assert p.returncode == 128 + 9 and "was ended by SIGKILL" in p.stderr
    con = pt2logs.connect(wh)
    assert con.execute("SELECT exit_code, exit_signal FROM runs").fetchall() == [(-9, "SIGKILL")]
    assert (
        con.execute("SELECT count(*) FROM compilation_metrics").fetchone()[0] == 1
    )  # it compiled before it died
    run = _run(wh, "killed")
    assert run["outcome"] == "killed" and (run["evidence_file"], run["evidence_line"]) == (
        "pt2logs_run.json",
        1,
    )
    assert "ended by SIGKILL (exit code -9)" in run["evidence"]


def test_a_rank_whose_trace_ends_inside_a_compile(captures, tmp_path):
    """A process killed mid-compile leaves a trace that stops inside the compile: rank 0's real
    trace cut before its compile ends (at the record that starts inductor's compile)."""
    src = captures["dest"] / "desync_hang" / "trace"
    folder = tmp_path / "job" / "trace"
    folder.mkdir(parents=True)
    for f in src.iterdir():
        data = f.read_bytes()
        if "_rank_0_" in f.name:
            data = data[: data.index(b'"name": "inductor_compile"')]
            data = data[
                : data.rindex(b"\n") + 1
            ]  # drop that record's header line: the file ends before it
        (folder / f.name).write_bytes(data)
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(folder)], wh)
    ranks = {r["rank"]: r for r in _q(wh, "rank_outcomes")}
    assert (ranks[0]["open_compiles"], ranks[0]["open_compile_ids"]) == (1, "0/0") and ranks[0][
        "open_phase"
    ]
    assert ranks[1]["open_compiles"] == 0
    # silent longer than its threshold (10x its cadence, at least 60 s: on a loaded machine rank 1 may
    # log that long after the cut) it hung mid-compile; a few seconds of silence are not a hang
    if ranks[0]["silent_s"] >= ranks[0]["threshold_s"]:
        assert ranks[0]["outcome"] == "hung" and ranks[0]["why"].startswith(
            "compile 0/0 began and never finished (in "
        )
    else:
        assert ranks[0]["outcome"] == "unknown" and ranks[0]["why"].startswith(
            "the log ends inside compile 0/0 ("
        )
        assert ranks[0]["why"].endswith(" with no exit record: crashed or killed while compiling?")


# ---------------------------------------------------------------------------- outcomes that agree with the logs


def test_a_deadlock_stopped_from_outside_after_silence_is_hung(captures, monkeypatch):
    """A real DDP deadlock (no collective timeout fires) that the launcher's SIGTERM ends after both ranks
    were silent for STOP_AFTER_S: it hung, and the stop ended it. The threshold is each rank's own:
    10 times its largest gap between trace events (or its stderr lines), at least 60 s."""
    wh, dest = captures["wh"], captures["dest"]
    run = _run(wh, "deadlock_stopped")
    assert run["outcome"] == "hung", run
    # the root: the rank that went silent first (which one is a race between the two)
    assert (
        run["why"].startswith(f"rank {run['silent_first_rank']}: stopped from outside after ")
        and " s of silence" in run["why"]
    )
    assert run["evidence"].endswith("Received 15 death signal, shutting down workers")
    assert (
        _line(dest, "deadlock_stopped", run["evidence_file"], run["evidence_line"])
        == run["evidence"]
    )
    ranks = _ranks(wh, "deadlock_stopped")
    assert {r["outcome"] for r in ranks.values()} == {"hung"}
    for r in ranks.values():
        assert (
            r["why"].startswith("stopped from outside after ")
            and r["quiet_s"] >= r["threshold_s"] >= 60
        )
        assert r["threshold_s"] == max(60, round(10 * r["gap_s"], 1)) or r["threshold_s"] > 60
    # a job stopped 1 s after its compiles (preempted) stays killed: its silence is short
    assert _run(wh, "preempted")["outcome"] == "killed"
    monkeypatch.setenv("COLUMNS", "200")
    out = (
        CliRunner()
        .invoke(main, ["summary", "deadlock_stopped", "-w", wh], catch_exceptions=False)
        .output
    )
    assert f"outcome    hung: rank {run['silent_first_rank']}: stopped from outside after" in out


def test_a_rank_that_logged_until_the_end_did_not_go_silent(captures):
    """rank 0's real last trace event of the preempted run put at the run's end: no "went silent" line
    (it used to read "rank 1 went silent first: last trace event 0 s before the end")."""
    from pt2logs.reports.outcomes import run_outcome, silence_line

    con = pt2logs.connect(captures["wh"])
    o = run_outcome(con, _run(captures["wh"], "desync_hang")["run_id"])
    assert o is not None and silence_line(o) and "went silent first" in silence_line(o)
    o.run = {**o.run, "silent_s": 0.0}
    assert silence_line(o) is None
    o.run = {**o.run, "silent_s": 2.5}
    assert silence_line(o).startswith(
        "rank 0 went silent first: last trace event 2.5 s before the end"
    )


AUTOTUNE = Path(__file__).parent / "inputs" / "gpu_autotune"


def test_an_autotune_error_torch_logged_is_not_how_the_run_ended(tmp_path, monkeypatch):
    """A real max-autotune run on an H200 (torch 2.11.0+cu130, triton 3.6; tests/inputs/gpu_autotune):
    inductor logged dozens of "No valid triton configs. OutOfMemoryError: out of resource" choices and
    ignored them; the process was ended by `timeout` while still autotuning compile 0/0, so its trace
    ends inside that compile and nothing records an exit. It did not fail (it read `failed: an
    exception [torch_logs.txt:4]`), and it does not read "no exit status" alone."""
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(AUTOTUNE)], wh, run_id="autotune")
    con = pt2logs.connect(wh)
    assert (
        con.execute(
            "SELECT count(*) FROM log_lines WHERE message LIKE '%No valid triton configs%'"
        ).fetchone()[0]
        >= 20
    )
    assert con.execute("SELECT count(*) FROM outcome_evidence").fetchone()[0] == 0
    run = _run(wh, "gpu_autotune")
    assert run["outcome"] == "unknown", run
    assert run["why"] == (
        "the log ends inside compile 0/0 (mm_template_autotuning) with no exit record: "
        "crashed or killed while compiling?"
    )
    (rank,) = _ranks(wh, "gpu_autotune").values()
    # its trace went quiet 5 minutes before the end, but its stderr logged autotuning until the end: not hung
    assert (
        rank["silent_s"] > 300
        and rank["quiet_s"] < rank["threshold_s"]
        and rank["open_compile_ids"] == "0/0"
    )
    monkeypatch.setenv("COLUMNS", "200")
    out = CliRunner().invoke(main, ["summary", "autotune", "-w", wh], catch_exceptions=False).output
    assert "outcome    unknown: the log ends inside compile 0/0 (mm_template_autotuning)" in out


def test_the_advice_on_a_two_rank_run_says_what_each_rank_did(captures):
    """The deadlock job's two ranks each recompiled once on a size (8 -> 16) and once on a Python flag:
    the advice says "1 time on each of 2 ranks" (it said "changed 2 time(s)"), and one size change per
    rank is no shape storm (it fired on the two sizes 8, 16)."""
    items = _q(captures["wh"], "advice", run_id="deadlock_stopped")
    assert not [r for r in items if r["id"] == "shape_storm"], items
    (p,) = [r for r in items if r["id"] == "python_value"]
    assert (
        "`flag` was True when compiled; it changed 1 time on each of 2 ranks in `<lambda> (outcome_jobs.py:"
        in p["evidence"]
    )
    assert (
        p["recompiles"] == 2
    )  # the cost columns still add up every rank (the query's header says so)

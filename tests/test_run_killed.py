"""`pt2logs run` killed with SIGKILL while its command runs (real processes, no torch needed): the
command keeps its stderr (no SIGPIPE at its next write), the capture file gets every line, and the
record written at the start lets a later `ingest` of the capture folder give the run its command, with
the exit status unknown."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pt2logs

CHILD = textwrap.dedent("""
    import sys, time
    print("child started", file=sys.stderr, flush=True)
    while not __import__("os").path.exists(sys.argv[1]):
        time.sleep(0.05)
    for i in range(3):
        print(f"child after the kill {i}", file=sys.stderr, flush=True)
    open(sys.argv[2], "w").write("survived")
""")


#: the pt2logs under test, whatever the working directory of the process that runs it
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(
        [str(Path(pt2logs.__file__).resolve().parent.parent)]
        + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    ),
}


def _wait_for(cond, timeout: float = 30.0, run=None) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, ("timed out", run and (run.kill(), run.stderr.read()))
        time.sleep(0.05)


def test_a_run_killed_with_sigkill_keeps_its_command_alive_and_its_record(tmp_path):
    script, go, done = tmp_path / "child.py", tmp_path / "go", tmp_path / "done"
    script.write_text(CHILD)
    wh = str(tmp_path / "wh")
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pt2logs",
            "run",
            "-w",
            wh,
            "--",
            sys.executable,
            str(script),
            str(go),
            str(done),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=ENV,
    )
    try:
        caps = Path(wh) / "_captures"
        _wait_for(
            lambda: (
                caps.is_dir()
                and any(
                    (d / "torch_logs.txt").is_file()
                    and b"child started" in (d / "torch_logs.txt").read_bytes()
                    for d in caps.iterdir()
                )
            ),
            run=run,
        )
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=30)
        run.stderr.close()  # everything that read run's side of the pipe is gone
        go.write_text("go")
        _wait_for(done.exists)  # the command wrote to its stderr after run died, and lived on
        assert done.read_text() == "survived"
    finally:
        if run.poll() is None:
            run.kill()
    (folder,) = caps.iterdir()
    log = (folder / "torch_logs.txt").read_bytes()
    _wait_for(lambda: b"child after the kill 2" in (folder / "torch_logs.txt").read_bytes())
    # the tee, once the command's stderr closed, notes that no format claims it: the record's to read
    _wait_for(
        lambda: (
            json.loads((folder / "pt2logs_run.json").read_text()).get("stderr_read_by")
            == "run_record"
        )
    )
    assert b"child started" in log
    res = pt2logs.ingest([str(folder)], wh)
    assert res.errors == 0
    con = pt2logs.connect(wh)
    ((command, code, sig, host, cwd),) = con.execute(
        "SELECT command, exit_code, exit_signal, host, cwd FROM runs"
    ).fetchall()
    assert (
        command.endswith(f"child.py {go} {done}")
        and code is None
        and sig is None
        and host
        and cwd == str(tmp_path)
    )
    ((text,),) = con.execute(
        "SELECT text FROM outcome_evidence WHERE kind = 'exit_status'"
    ).fetchall()
    assert "exit status unknown" in text
    text = "\n".join(
        m for (m,) in con.execute("SELECT message FROM log_lines ORDER BY line_no").fetchall()
    )
    assert text.splitlines() == ["child started"] + [
        f"child after the kill {i}" for i in range(3)
    ]  # the stderr, read


def test_a_run_that_ends_records_its_exit_status_for_a_later_ingest_too(tmp_path):
    wh = str(tmp_path / "wh")
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pt2logs",
            "run",
            "-w",
            wh,
            "--",
            sys.executable,
            "-c",
            "import sys; print('bye', file=sys.stderr); sys.exit(4)",
        ],
        capture_output=True,
        timeout=120,
        cwd=tmp_path,
        env=ENV,
    )
    assert p.returncode == 4 and b"bye" in p.stderr  # shown live, as before
    (folder,) = (Path(wh) / "_captures").iterdir()
    assert not [f for f in os.listdir(folder) if f.endswith(".tmp")]
    wh2 = str(tmp_path / "wh2")
    pt2logs.ingest([str(folder)], wh2)  # the folder alone, as after a copy elsewhere
    ((command, code),) = (
        pt2logs.connect(wh2).execute("SELECT command, exit_code FROM runs").fetchall()
    )
    assert "sys.exit(4)" in command and code == 4

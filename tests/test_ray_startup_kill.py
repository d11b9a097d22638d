"""A Ray ingest killed while its local Ray starts leaves no Ray process behind (issue 31 item 8).

A real ``pt2logs ingest --engine ray`` of a sample run is killed once Ray's agents are starting (the
stage where, before the engine's reaper, Ctrl-C and SIGKILL left the dashboard and runtime-env agents
running for about 15 s); then no process of that Ray instance may remain. The instance's processes are
told from any other Ray on the machine by the temp folder they name (``RAY_TMPDIR`` is the test's own).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest
from tests.conftest import ROOT, SAMPLES

pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

#: a starting Ray on a loaded 2-core machine took up to 25 s to reach its agents
START_S = 90
#: after the ingest ends, its Ray processes get this long to be gone (the reaper's grace is 3 s)
GONE_S = 8


def _ours(folder: str, ingest_pid: int) -> list:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            cmd = p.info["cmdline"] or []
            if p.pid != ingest_pid and any(folder in a for a in cmd):
                found.append(p)
        except psutil.Error:
            continue
    return found


def _agent(p) -> bool:
    """Whether ``p`` is one of the agents the raylet starts (dashboard, runtime env)."""
    try:
        return any(a.endswith(("dashboard/agent.py", "agent/main.py")) for a in p.cmdline())
    except psutil.Error:
        return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_killed_ray_startup_leaves_no_daemon(sig: signal.Signals) -> None:
    # a short folder: Ray's socket paths live under it (at most 107 bytes)
    folder = tempfile.mkdtemp(prefix="p2r", dir="/tmp")
    env = {**os.environ, "RAY_TMPDIR": folder, "PYTHONPATH": str(ROOT / "src")}
    ingest = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pt2logs",
            "ingest",
            str(SAMPLES / "compile_failure"),
            "-w",
            os.path.join(folder, "wh"),
            "--engine",
            "ray",
            "-j",
            "1",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        t = time.monotonic()
        while time.monotonic() - t < START_S and ingest.poll() is None:
            if any(_agent(p) for p in _ours(folder, ingest.pid)):
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"Ray's agents did not start in {START_S} s (ingest rc {ingest.poll()})")
        ingest.send_signal(sig)
        ingest.wait(timeout=60)
        t = time.monotonic()
        while _ours(folder, ingest.pid) and time.monotonic() - t < GONE_S:
            time.sleep(0.2)
        left = [" ".join(p.cmdline())[:120] for p in _ours(folder, ingest.pid)]
        assert not left, f"Ray processes outlived the killed ingest by {GONE_S} s: {left}"
    finally:
        if ingest.poll() is None:
            ingest.kill()
            ingest.wait()
        for p in _ours(folder, ingest.pid):  # this test's own, named by its folder
            with contextlib.suppress(psutil.Error):
                p.kill()
        shutil.rmtree(folder, ignore_errors=True)

"""A full disk during an ingest (a real one: a 1 MiB tmpfs, mounted when this runs as root; skipped
otherwise): one clear line naming the file and how much was written, no worker traceback, no
``ParquetWriter.__del__`` noise at exit, no half-written file left, nothing committed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import FIXTURES, SAMPLES, settled

import pt2logs

ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(
        [str(Path(pt2logs.__file__).resolve().parent.parent)]
        + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    ),
}


@pytest.fixture
def full_disk(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True
        ).returncode
        != 0
    ):
        pytest.skip("needs root to mount a 1 MiB tmpfs")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_full_disk_is_one_clear_line_and_leaves_nothing_behind(full_disk, jobs):
    wh = full_disk / "wh"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pt2logs",
            "ingest",
            str(SAMPLES),
            str(FIXTURES / "torch_logs"),
            "-w",
            str(wh),
            "-j",
            jobs,
            "-q",
        ],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr[-3000:]
    line = lines[0]
    assert line.startswith(f"Error: no space left on the device writing {wh}/"), line
    assert ".parquet" in line and "MB of this writer's files written, none of it committed" in line
    settled(wh)  # the views writer the ingest forked removes what it prepared when the ingest fails
    assert not [f for f in wh.rglob("*.tmp")]
    assert pt2logs.connect(str(wh)).execute("SELECT count(*) FROM runs").fetchone()[0] == 0

"""`pt2logs run -- CMD` and `pt2logs.capture()` with real torch.compile workloads (torch 2.13 CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from tests.conftest import needs_torch

import pt2logs

pytestmark = needs_torch

WORKLOAD = textwrap.dedent("""
    import sys, torch
    def f(x, k):
        return x * k + 1
    cf = torch.compile(f, backend="eager")
    for k in (2, 3, 5):
        cf(torch.randn(8), k)
    print("workload finished", file=sys.stderr)
    sys.exit(3)
""")


@pytest.mark.slow
def test_run_records_the_command_and_ingests_its_logs(tmp_path):
    script = tmp_path / "work.py"
    script.write_text(WORKLOAD)
    wh = str(tmp_path / "wh")
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")}
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pt2logs",
            "run",
            "-w",
            wh,
            "--tag",
            "model=toy",
            "--",
            sys.executable,
            str(script),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert p.returncode == 3, p.stderr[-2000:]
    assert "workload finished" in p.stderr  # stderr still shown live
    assert "[__recompiles]" in p.stderr
    con = pt2logs.connect(wh)
    ((name, command, code, wall, host, tags, n_files),) = con.execute(
        "SELECT name, command, exit_code, wall_s, host, tags, n_files FROM runs"
    ).fetchall()
    assert command.endswith("work.py") and code == 3 and wall > 0 and host
    assert json.loads(tags) == {"model": "toy"}
    causes = [
        c
        for (c,) in con.execute(
            "SELECT cause FROM recompiles WHERE source = 'trace' ORDER BY compile_id"
        ).fetchall()
    ]
    assert causes == ["python_value_changed"]  # k=2 then 3; from then on k is dynamic
    # the working directory is the run's root: user code is shown relative to it
    ((cwd, root, py),) = con.execute("SELECT cwd, user_root, python_version FROM runs").fetchall()
    assert (cwd, root, py) == (str(tmp_path), str(tmp_path) + "/", sys.version.split()[0])
    assert con.execute(
        "SELECT DISTINCT co_file, guard_kind, guard_source FROM recompiles WHERE source = 'trace'"
    ).fetchall() == [("work.py", "equals", "k")]
    files = {r for (r,) in con.execute("SELECT relpath FROM files").fetchall()}
    assert any(r.startswith("trace/dedicated_log_torch_trace") for r in files)
    captured = list((tmp_path / "wh" / "_captures").iterdir())
    assert len(captured) == 1
    counters = json.loads((captured[0] / "counters.json").read_text())
    assert counters["counters"]["stats"]["unique_graphs"] == 2


@pytest.mark.slow
def test_capture_context_manager(tmp_path):
    wh = str(tmp_path / "wh")
    code = textwrap.dedent(f"""
        import torch, pt2logs, json
        with pt2logs.capture({wh!r}, tags={{"model": "inproc"}}) as cap:
            cf = torch.compile(lambda x, k: x * k, backend="eager")
            for k in (2, 3):
                cf(torch.randn(4), k)
        print(json.dumps(cap["ingest"].run_ids))
    """)
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")}
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert p.returncode == 0, p.stderr[-2000:]
    run_ids = json.loads(p.stdout.strip().splitlines()[-1])
    con = pt2logs.connect(wh)
    assert [r for (r,) in con.execute("SELECT run_id FROM runs").fetchall()] == run_ids
    assert con.execute("SELECT count(*) FROM recompiles WHERE source = 'trace'").fetchone()[0] == 1
    assert con.execute("SELECT count(*) FROM compilation_metrics").fetchone()[0] == 2
    folder = next((tmp_path / "wh" / "_captures").iterdir())
    assert (
        json.loads((folder / "counters.json").read_text())["counters"]["stats"]["unique_graphs"]
        == 2
    )
    assert "[__recompiles]" in (folder / "torch_logs.txt").read_text()


def test_the_command_gets_the_users_arrow_allocator_not_ours(tmp_path):
    """pt2logs picks jemalloc for itself (pt2logs/_alloc.py); the command it runs sees the user's setting."""
    probe = [
        sys.executable,
        "-c",
        "import os, sys; print('pool=' + str(os.environ.get('ARROW_DEFAULT_MEMORY_POOL')), file=sys.stderr)",
    ]
    for user, expect in ((None, "pool=None"), ("system", "pool=system")):
        env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
        if user:
            env["ARROW_DEFAULT_MEMORY_POOL"] = user
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "pt2logs",
                "run",
                "-w",
                str(tmp_path / f"wh{user}"),
                "--",
                *probe,
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
        assert p.returncode == 0, p.stderr[-2000:]
        assert expect in p.stderr
    if sys.platform == "linux":  # and pt2logs itself runs on jemalloc, where pyarrow has it
        code = (
            "import pt2logs, pyarrow as pa\ntry:\n    pa.jemalloc_memory_pool(); has = True\n"
            "except NotImplementedError:\n    has = False\nprint(pa.default_memory_pool().backend_name, has)"
        )
        env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
        name, has = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
        ).stdout.split()
        assert name == ("jemalloc" if has == "True" else "mimalloc")

"""``pt2logs_run.json``: what a capture folder records about its command (command, exit code or signal, wall
time, start and end, host, the debug environment), written at the start and at the end of ``pt2logs run``
and ``pt2logs.capture()``; read back by :mod:`pt2logs.readers.documents.run_record`.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import re
import socket
import subprocess
from pathlib import Path
from typing import Any

from pt2logs.readers.documents.run_record import NAME as RECORD_NAME
from pt2logs.readers.lines.outcome_patterns import signal_name
from pt2logs.recording.tee import stderr_read_by
from pt2logs.redaction.redact import redact


def git_commit(cwd: str | os.PathLike[str] | None = None) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def installed_torch() -> str | None:
    """The version of torch installed where pt2logs runs (its metadata; torch is not imported): the
    last source of a run's torch version, for a command that died before torch logged anything."""
    try:
        return importlib.metadata.version("torch")
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None


#: environment variables that change what torch.compile (and torch-spyre, vLLM's compile) does or
#: logs: kept in the record (values redacted) for bug reports (``pt2logs bundle``)
_DEBUG_ENV = re.compile(
    r"^(TORCH|TORCHDYNAMO|TORCHINDUCTOR|TORCHELASTIC|PYTORCH|TORCH_SPYRE|SENCORES|DT|DTLOG|FLEX|"
    r"VLLM_SPYRE|VLLM_TORCH|TRITON|NCCL|CUDA_LAUNCH_BLOCKING|CUBLAS|INDUCTOR)(_|$)"
)


def debug_env(env: dict[str, str]) -> dict[str, str]:
    """The debug-relevant variables of ``env`` (values with obvious secrets redacted), sorted."""
    # redacted as NAME=value, so a value is masked by its name too (TORCH_SPYRE_TOKEN=***)
    return dict(
        redact(f"{k}={v}").split("=", 1)
        for k, v in sorted(env.items())  # type: ignore[misc]
        if _DEBUG_ENV.match(k) and k != "PT2LOGS_COUNTERS_OUT"
    )


def write_record(
    d: Path,
    *,
    command: str,
    exit_code: int | None,
    wall_s: float | None,
    started_at: float,
    ended_at: float | None,
    name: str | None = None,
    stderr: str = "torch_logs.txt",
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``pt2logs_run.json``: the command's own record (:mod:`pt2logs.readers.documents.run_record`). When no
    format recognises its stderr (a command that died before torch logged), the record's reader reads it.
    ``env``: the command's environment; its debug variables and this machine's platform are kept.
    Written at the start too (``exit_code``, ``wall_s`` and ``ended_at`` None): what a ``pt2logs run``
    killed before the command ended leaves (an ``ingest`` of the folder: the command, exit status unknown)."""
    read_by = stderr_read_by(d / stderr)
    rec = {
        "pt2logs_run": 1,
        "command": command,
        "exit_code": exit_code,
        "signal": signal_name(exit_code) if exit_code is not None and exit_code < 0 else None,
        "wall_s": None if wall_s is None else round(wall_s, 3),
        "started_at": round(started_at, 6),
        "ended_at": None if ended_at is None else round(ended_at, 6),
        "name": name,
        "host": socket.gethostname(),
        "cwd": os.getcwd(),
        "stderr": stderr,
        "stderr_read_by": read_by,
        "torch": installed_torch(),
        "platform": platform.platform(),
        "env": debug_env(env if env is not None else dict(os.environ)),
    }
    tmp = d / f".{RECORD_NAME}.tmp"  # replaced whole: a kill never leaves half a record
    tmp.write_text(json.dumps(rec, indent=1) + "\n")
    os.replace(tmp, d / RECORD_NAME)
    return rec


def record_extra(rec: dict[str, Any]) -> dict[str, Any]:
    """``runs`` fields from a record: the command's own start and end are the run's."""
    extra = {
        "command": rec["command"],
        "exit_code": rec["exit_code"],
        "exit_signal": rec["signal"],
        "wall_s": rec["wall_s"],
        "host": rec["host"],
        "git_commit": git_commit(),
        "started_at": int(rec["started_at"] * 1e6),
        "cwd": os.getcwd(),
    }
    if rec.get("name"):
        extra["name"] = rec["name"]
    return extra

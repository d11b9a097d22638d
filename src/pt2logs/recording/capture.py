"""Record a run while it happens: ``pt2logs run -- CMD`` and ``pt2logs.capture()``.

Both write into a fresh capture folder (by default ``<warehouse>/_captures/<stamp>``)::

    trace/                 TORCH_TRACE output (one file per rank)
    torch_logs.txt         the program's stderr (TORCH_LOGS text), still shown live (through capture_tee.py)
    counters.json          torch._dynamo counters + compile_times() at exit
    pt2logs_run.json       the command's own record, written at the start and the end: command, exit code or signal, wall time,
                           start and end (see :mod:`pt2logs.readers.documents.run_record`)

then ingest it as one run, with the command, exit code, wall time, host, tags
and the git commit of the working directory in ``runs``. The record makes the
run whatever happened: a command that failed before torch logged anything is
still a run, its stderr read as log lines.

For a subprocess the counters come from a ``sitecustomize`` hook put first on
``PYTHONPATH``: it registers an ``atexit`` dump when ``torch._dynamo`` was used,
then chains to any other ``sitecustomize`` on the path.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pt2logs._alloc import USER_ARROW_POOL
from pt2logs.ingestion import IngestResult, ingest
from pt2logs.readers.documents.counters import dump_document
from pt2logs.readers.documents.run_record import FORMAT as RUN_RECORD
from pt2logs.readers.documents.run_record import NAME as RECORD_NAME
from pt2logs.readers.lines.outcome_patterns import signal_name
from pt2logs.recording import DEFAULT_TORCH_LOGS
from pt2logs.recording.record import record_extra, write_record
from pt2logs.recording.tee import TEE_ARGV
from pt2logs.redaction.masking import Learnt, join, scrub_folder
from pt2logs.store.warehouse import DEFAULT_WAREHOUSE, Warehouse

_SITECUSTOMIZE = """\
# written by pt2logs run: dump torch._dynamo counters at exit, then chain to the real sitecustomize
import atexit, os, sys

def _pt2logs_dump():
    out = os.environ.get("PT2LOGS_COUNTERS_OUT")
    mod = sys.modules.get("torch._dynamo.utils")
    if not out or mod is None:
        return
    try:
        import json
        rank = os.environ.get("RANK")
        path = out if rank in (None, "0") else out.replace(".json", f".rank{rank}.json")
        counters = {k: {str(kk): vv for kk, vv in v.items()} for k, v in mod.counters.items()}
        try:
            ct = mod.compile_times(repr="str", aggregate=False)
        except Exception:
            ct = None
        with open(path, "w") as f:
            torch_mod = sys.modules.get("torch")
            json.dump({"counters": counters, "compile_times": ct, "rank": None if rank is None else int(rank),
                       "pid": os.getpid(), "torch": getattr(torch_mod, "__version__", None)}, f, indent=1)
    except Exception:
        pass

atexit.register(_pt2logs_dump)
_here = os.path.dirname(os.path.abspath(__file__))
try:
    import importlib.machinery, importlib.util
    _others = [p for p in sys.path if os.path.abspath(p or ".") != _here]
    _spec = importlib.machinery.PathFinder.find_spec("sitecustomize", _others)
    if _spec is not None and _spec.loader is not None:
        _mod = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(_mod)
except Exception:
    pass
"""


def capture_dir(warehouse: str, base: str | None = None) -> Path:
    """A fresh folder for one capture."""
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    wh = Warehouse(warehouse)
    root = (
        Path(base)
        if base
        else (Path(wh.root) / "_captures" if not wh.remote else Path.cwd() / "pt2logs_captures")
    )
    d = root / f"{stamp}-{os.getpid()}"
    n = 0
    while d.exists():
        n += 1
        d = root / f"{stamp}-{os.getpid()}-{n}"
    (d / "trace").mkdir(parents=True)
    return d


@dataclass
class RunResult:
    exit_code: int
    wall_s: float
    folder: Path
    ingest: IngestResult | None
    command: list[str] = field(default_factory=list)  # secrets masked (what may be shown)

    @property
    def signal(self) -> str | None:
        """The signal that ended the command (a negative exit code), else None."""
        return signal_name(self.exit_code) if self.exit_code < 0 else None


def _not_skipped(res: IngestResult, d: Path, rec: dict[str, Any]) -> None:
    """The stderr is part of the run (read by the record, or empty): not a skipped file."""
    err = d / rec["stderr"]
    if rec.get("stderr_read_by") == RUN_RECORD.name or not err.is_file() or err.stat().st_size == 0:
        res.skipped = [
            (p, why)
            for p, why in res.skipped
            if Path(p).name != rec["stderr"] or Path(p).parent != d
        ]


def run_command(
    cmd: list[str],
    warehouse: str = DEFAULT_WAREHOUSE,
    *,
    tags: dict[str, str] | None = None,
    folder: str | None = None,
    torch_logs: str | None = None,
    echo: Any = None,
    name: str | None = None,
) -> RunResult:
    """Run ``cmd`` with TORCH_TRACE / TORCH_LOGS set, tee its stderr, then ingest the capture as one
    run (named ``name``, default the capture folder's name), whatever the command did."""
    if not cmd:
        raise ValueError("no command given: pt2logs run -- python train.py ...")
    d = capture_dir(warehouse, folder)
    hook = d / ".pt2logs_hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    env = dict(os.environ)
    if (
        USER_ARROW_POOL is None
    ):  # set by pt2logs for itself (pt2logs/_alloc.py), not for the command
        env.pop("ARROW_DEFAULT_MEMORY_POOL", None)
    env["TORCH_TRACE"] = str(d / "trace")
    env.setdefault("TORCH_LOGS", torch_logs or DEFAULT_TORCH_LOGS)
    if torch_logs:
        env["TORCH_LOGS"] = torch_logs
    env["PT2LOGS_COUNTERS_OUT"] = str(d / "counters.json")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(hook)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    # the secrets it is given, learnt now (in memory only) and masked in all that is kept (pt2logs.redaction.masking)
    learnt = Learnt().learn_env(env).learn_argv(cmd)
    shown = learnt.argv(cmd)
    echo = echo if echo is not None else sys.stderr.buffer
    t0 = time.perf_counter()
    started = time.time()
    write_record(
        d,
        command=join(shown),
        exit_code=None,
        wall_s=None,
        started_at=started,
        ended_at=None,
        name=name,
        env={k: learnt.text(v) for k, v in env.items()},
    )
    # the command's stderr goes through a tee process (capture_tee.py), not this one: killed, this
    # process leaves the command its stderr and the capture file every line. The tee learns the same
    # secrets (from its environment, which holds the command's, and the argv handed over below)
    (d / "torch_logs.txt").touch()
    tee = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pt2logs.recording.tee",
            str(d / "torch_logs.txt"),
            str(d / RECORD_NAME),
            str(os.getpid()),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=_tee_env(cmd),
    )
    try:
        proc = subprocess.Popen(cmd, env=env, stderr=tee.stdin)
    except OSError as e:
        tee.stdin.close()
        tee.wait()
        raise ValueError(f"cannot run {join(shown)}: {e.strerror}") from None
    tee.stdin.close()  # the command holds the only write end: the tee ends when the command's stderr closes
    pump = threading.Thread(target=_echo, args=(tee.stdout, echo), daemon=True)
    pump.start()
    try:
        code = proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(2)
        code = proc.wait()
    tee.wait()
    pump.join()
    wall = time.perf_counter() - t0
    scrub_folder(
        d, learnt
    )  # what torch wrote (fx_graph_runnable dumps TORCH* variables), before ingest reads it
    rec = write_record(
        d,
        command=join(shown),
        exit_code=code,
        wall_s=wall,
        started_at=started,
        ended_at=started + wall,
        name=name,
        env={k: learnt.text(v) for k, v in env.items()},
    )
    res = ingest(
        [str(d)],
        warehouse,
        run_id=None,
        tags=tags or {},
        extra_run_fields=record_extra(rec),
        as_one_run=True,
    )
    _not_skipped(res, d, rec)
    return RunResult(code, wall, d, res, shown)


def _tee_env(cmd: list[str]) -> dict[str, str]:
    """The tee process imports this pt2logs, wherever it was imported from, and gets this process's
    environment and the command's argv (TEE_ARGV) to learn the same secrets (nothing visible that
    /proc did not already show). Not the command's environment: its PYTHONPATH runs the capture hook."""
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parents[2])  # the folder pt2logs/ is in
    env["PYTHONPATH"] = os.pathsep.join(
        [here] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    env[TEE_ARGV] = json.dumps(list(cmd))
    return env


def _echo(src: Any, echo: Any) -> None:
    """The program's stderr shown live as it is (the tee process keeps it, masked, in the file)."""
    for chunk in iter(lambda: src.read1(65536), b""):
        try:
            echo.write(chunk)
            echo.flush()
        except (OSError, ValueError):
            pass


@contextlib.contextmanager
def capture(
    warehouse: str = DEFAULT_WAREHOUSE,
    *,
    tags: dict[str, str] | None = None,
    folder: str | None = None,
    torch_logs: str = DEFAULT_TORCH_LOGS,
) -> Iterator[dict[str, Any]]:
    """Capture this process's torch.compile logs for the duration of the block, then ingest them.

    ::

        with pt2logs.capture("./wh", tags={"model": "mlp"}) as cap:
            torch.compile(model)(x)
        cap["ingest"].run_ids   # the run it became
    """
    import logging

    import torch
    import torch._dynamo.utils as dutils
    import torch._logging
    from torch._logging import _internal as tl
    from torch._logging._internal import LazyTraceHandler, trace_log

    d = capture_dir(warehouse, folder)
    learnt = Learnt().learn_env(os.environ).learn_argv(sys.argv)
    info: dict[str, Any] = {"folder": d}
    started = time.time()
    # TORCH_LOGS text: the artifacts asked for, written to a file as well as to stderr
    artifacts = {a: True for a in torch_logs.split(",") if a}
    with contextlib.suppress(Exception):
        torch._logging.set_logs(**artifacts)
    tl._init_logs(log_file_name=str(d / "torch_logs.txt"))
    # TORCH_TRACE: torch's own lazy trace handler, pointed at our folder
    handler = LazyTraceHandler(str(d / "trace"))
    handler.setFormatter(tl.TorchLogsFormatter(trace=True))
    old_level, old_prop = trace_log.level, trace_log.propagate
    trace_log.addHandler(handler)
    trace_log.setLevel(logging.DEBUG)
    trace_log.propagate = False
    dutils.counters.clear()
    t0 = time.perf_counter()
    code = 0
    try:
        yield info
    except BaseException:
        code = 1
        raise
    finally:
        wall = time.perf_counter() - t0
        trace_log.removeHandler(handler)
        handler.close()
        trace_log.setLevel(old_level)
        trace_log.propagate = old_prop
        with contextlib.suppress(Exception):
            torch._logging.set_logs()  # back to the defaults; also closes our file handlers
        counters = {k: {str(kk): vv for kk, vv in v.items()} for k, v in dutils.counters.items()}
        try:
            ct = dutils.compile_times(repr="str", aggregate=False)
        except Exception:  # noqa: BLE001
            ct = None
        (d / "counters.json").write_text(
            json.dumps(dump_document(counters, ct, torch.__version__), indent=1)
        )
        scrub_folder(d, learnt)
        rec = write_record(
            d,
            command=f"{Path(sys.argv[0]).name} (pt2logs.capture)",
            exit_code=code,
            wall_s=wall,
            started_at=started,
            ended_at=started + wall,
            env={k: learnt.text(v) for k, v in os.environ.items()},
        )
        info["ingest"] = ingest(
            [str(d)],
            warehouse,
            tags=tags or {},
            extra_run_fields=record_extra(rec),
            as_one_run=True,
        )
        _not_skipped(info["ingest"], d, rec)

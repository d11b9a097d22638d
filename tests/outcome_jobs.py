"""Real 2-rank jobs that end badly, for the run-outcome tests: torch 2.13 on CPU, gloo, torchrun.

``make(dest)`` runs each job into ``dest/<job>/`` (``trace/`` = TORCH_TRACE, ``stderr.txt`` = the
launcher's stderr with TORCH_LOGS=recompiles,graph_breaks) and returns what happened. The same file is
the workload: ``python outcome_jobs.py --worker JOB`` (what torchrun starts). Jobs:

* ``desync_hang``: a rank-dependent Python branch inside the compiled function puts an all_reduce in
  rank 0's graph only; rank 1 goes on (and recompiles once rank 0's trace shows its compile is done,
  so rank 0 is the one that went silent first), then waits for rank 0 in a recv. Nothing matches:
  both wait until gloo's 20 s timeout, torchrun then ends the job.
* ``rank_raises``: rank 1 raises after its second step; torchrun ends rank 0.
* ``sigkill``: rank 1 is killed with SIGKILL mid-run (as the OOM killer does); torchrun ends rank 0.
* ``clean``: both ranks finish (run through ``pt2logs run`` by the tests).
* ``preempted``: both ranks compile, then work on; the launcher gets SIGTERM from outside (a
  scheduler's preemption) once both traces show their compile (:func:`run_and_stop`). It runs in
  Tokyo time (TZ=Asia/Tokyo): its stderr's local times are 9 h ahead of the trace's UTC.
* ``deadlock_stopped``: a DDP deadlock that nothing times out (gloo's timeout is 10 minutes): rank 0
  waits in an all_reduce rank 1 never joins, rank 1 in a recv rank 0 never sends; once both traces have
  been silent for ``STOP_AFTER_S`` the launcher gets SIGTERM (a scheduler's or a user's stop of a stuck
  job: :func:`run_and_stop` with ``after_silence``).

Every job is bounded (``TIMEOUT_S``); logs are written only under ``dest`` (never committed).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

HERE = os.path.abspath(__file__)
JOBS = ("desync_hang", "rank_raises", "sigkill", "clean", "preempted", "deadlock_stopped")
TIMEOUT_S = 300  # a hang guard (a job takes 10-30 s on a quiet machine): it runs beside the tests
GLOO_TIMEOUT_S = 20
#: the deadlock's silence before the stop: above the 60 s floor of the hang threshold (pt2logs.query.outcome_rules)
STOP_AFTER_S = 68


def worker(job: str) -> None:
    import torch
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", timeout=timedelta(seconds=600 if job == "deadlock_stopped" else GLOO_TIMEOUT_S)
    )
    rank = dist.get_rank()

    def step(x):
        y = x.sin() * 2
        if job == "desync_hang" and rank == 0:  # a rank-dependent branch inside the compiled region
            dist.all_reduce(y)
        return y.cos() + 1

    # inductor where the graphs matter (the collective lands in rank 0's output code); the rest compile faster
    f = torch.compile(step, backend="inductor" if job == "desync_hang" else "aot_eager")
    for i in range(3):
        f(torch.randn(8))
        if job == "rank_raises" and rank == 1 and i == 1:
            raise RuntimeError("rank 1 gave up: the loss became NaN")
        if job == "sigkill" and rank == 1 and i == 1:
            os.kill(os.getpid(), signal.SIGKILL)
    if job == "desync_hang" and rank == 1:
        _wait_for_compile_of_rank0()
        f(torch.randn(12))  # a recompile: rank 1 keeps logging after rank 0 went silent
    if job == "deadlock_stopped":  # both ranks compiled; now each waits for the other for ever
        # first one recompile per rank on a size (8 -> 16) and one on a Python flag (for the advice's per-rank figures)
        f(torch.randn(16))
        g = torch.compile(lambda x, flag: x + 1 if flag else x - 1, backend="aot_eager")
        g(torch.randn(4), True)
        g(torch.randn(4), False)
        tok = torch.zeros(1)
        if rank == 0:
            dist.all_reduce(tok)
        else:
            dist.recv(tok, 0)
    if job == "preempted":
        f(
            torch.randn(16)
        )  # a recompile: TORCH_LOGS prints it with its compile id (ties stderr times to the trace's)
        time.sleep(60)  # "training": the launcher is stopped from outside long before this ends
    tok = torch.zeros(1)
    if rank == 0:
        dist.send(tok, 1)
    else:
        dist.recv(tok, 0)
    dist.barrier()
    dist.destroy_process_group()


def _wait_for_compile_of_rank0() -> None:
    deadline = time.time() + 60
    pattern = os.path.join(os.environ["TORCH_TRACE"], "dedicated_log_torch_trace_rank_0_*.log")
    while time.time() < deadline:
        for p in glob.glob(pattern):
            with open(p, "rb") as fh:
                if b'"compilation_metrics"' in fh.read():
                    time.sleep(0.5)
                    return
        time.sleep(0.2)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def job_env(dest: str, job: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            (
                "TORCH_LOGS",
                "TORCH_TRACE",
                "TORCHINDUCTOR_",
                "TORCHDYNAMO_",
                "TORCHELASTIC_",
                "PT2LOGS_",
            )
        )
    }
    env.update(
        {
            "TORCH_TRACE": os.path.join(dest, job, "trace"),
            "TORCH_LOGS": "recompiles,graph_breaks",
            "TORCHINDUCTOR_CACHE_DIR": os.path.join(dest, f".cache_{job}"),
            "TORCHINDUCTOR_COMPILE_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "PYTHONUNBUFFERED": "1",
            "MASTER_ADDR": "127.0.0.1",
        }
    )
    from tests.conftest import torch_env  # (here: the job's own processes never import it)

    env.update(torch_env())
    return env


def torchrun(job: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        "2",
        "--nnodes",
        "1",
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        str(free_port()),
        HERE,
        "--worker",
        job,
    ]


def run_job(dest: str, job: str, wrap: list[str] | None = None) -> dict:
    """Run one job under torchrun (behind ``wrap``, e.g. ``pt2logs run ... --``), stderr to
    ``dest/job/stderr.txt``; returns its exit code and wall time."""
    os.makedirs(os.path.join(dest, job), exist_ok=True)
    cmd = (wrap or []) + torchrun(job)
    t0 = time.time()
    with open(os.path.join(dest, job, "stderr.txt"), "wb") as err:
        try:
            rc: int | str = subprocess.run(
                cmd,
                env=job_env(dest, job),
                stdout=subprocess.DEVNULL,
                stderr=err,
                cwd=dest,
                timeout=TIMEOUT_S,
            ).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    return {"job": job, "rc": rc, "wall_s": round(time.time() - t0, 1), "cmd": cmd}


def run_and_stop(dest: str, job: str, sig: int = signal.SIGTERM, after_silence: float = 0) -> dict:
    """Run ``job`` under torchrun and send ``sig`` to the launcher once every rank's trace shows a
    finished compile (what a scheduler does when it preempts a job), and then no trace has grown for
    ``after_silence`` seconds."""
    os.makedirs(os.path.join(dest, job), exist_ok=True)
    t0 = time.time()
    with open(os.path.join(dest, job, "stderr.txt"), "wb") as err:
        env = {**job_env(dest, job), **({"TZ": "Asia/Tokyo"} if job == "preempted" else {})}
        p = subprocess.Popen(
            torchrun(job), env=env, stdout=subprocess.DEVNULL, stderr=err, cwd=dest
        )
        pattern = os.path.join(dest, job, "trace", "dedicated_log_torch_trace_rank_*.log")
        while time.time() - t0 < TIMEOUT_S / 2 and p.poll() is None:
            files = glob.glob(pattern)
            if len(files) == 2 and all(
                b'"compilation_metrics"' in Path(f).read_bytes() for f in files
            ):
                break
            time.sleep(0.3)
        time.sleep(1)
        last, quiet_since = None, time.time()
        while after_silence and p.poll() is None and time.time() - t0 < TIMEOUT_S + after_silence:
            sizes = [os.path.getsize(f) for f in sorted(glob.glob(pattern))]
            if sizes != last:
                last, quiet_since = sizes, time.time()
            elif time.time() - quiet_since >= after_silence:
                break
            time.sleep(0.5)
        p.send_signal(sig)
        try:
            rc: int | str = p.wait(timeout=TIMEOUT_S / 2)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = "timeout"
    return {"job": job, "rc": rc, "wall_s": round(time.time() - t0, 1)}


def make(dest: Path) -> None:
    """Every job, run for real into ``dest``: three under torchrun into folders (trace + stderr), the
    clean one through ``pt2logs run`` (its run record in the warehouse ``dest/wh_clean``), the deadlock
    beside the others (it sits silent for a minute, using no CPU). What happened: ``dest/ran.json``."""
    out = str(dest)
    ran: dict = {}
    stuck = threading.Thread(
        target=lambda: ran.update(
            deadlock_stopped=run_and_stop(out, "deadlock_stopped", after_silence=STOP_AFTER_S)
        )
    )
    stuck.start()
    try:
        ran.update({job: run_job(out, job) for job in ("desync_hang", "rank_raises", "sigkill")})
        wh = os.path.join(out, "wh_clean")
        ran["clean"] = run_job(
            out,
            "clean",
            wrap=[sys.executable, "-m", "pt2logs", "run", "-w", wh, "--name", "clean job", "--"],
        )
        ran["preempted"] = run_and_stop(out, "preempted")
    finally:
        stuck.join()
    (dest / "ran.json").write_text(json.dumps(ran, indent=1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", choices=JOBS)
    ap.add_argument("--out")
    ap.add_argument("--only", nargs="+", choices=JOBS, default=list(JOBS))
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker)
        return 0
    for job in args.only:
        print(run_job(os.path.abspath(args.out), job))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Real runs for the event-family tests (kernel provenance, collectives, export + AOTInductor): torch 2.13
on CPU, each a few seconds, written only under ``dest`` (never committed).

``python event_jobs.py JOB DEST`` runs one job into ``DEST`` (``TORCH_TRACE``); the tests call
:func:`run` for each. Jobs:

* ``provenance``: a small model compiled with inductor's provenance tracking on (``INDUCTOR_PROVENANCE=1``,
  torch/_inductor/config.py ``trace.provenance_tracking_level``): the
  ``inductor_provenance_tracking_node_mappings`` / ``_kernel_stack_traces`` artifacts.
* ``collectives``: 2 ranks under torchrun with gloo, an all_reduce (a functional collective) inside a
  compiled function, ``LOG_TLPARSE=1`` (``inductor_runtime_and_tensor_meta``) and the graph execution order
  recorded (``torch._inductor.debug.record_and_log_graph_execution_order``: ``graph_execution``); rank 1's
  graph has one more op (an extern mm) than rank 0's before the collective (same collective schedule, other tensor
  metadata and runtime estimates: a divergence that does not hang).
* ``aoti``: ``torch.export`` + ``torch._inductor.aoti_compile_and_package`` of a small model on CPU
  (``exported_program``, ``inductor_aot_{wrapper,kernel,header}_code``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

HERE = os.path.abspath(__file__)
TIMEOUT_S = 600  # a hang guard (a job takes seconds on a quiet machine): it runs beside the tests


def _provenance() -> None:
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 4)

        def forward(self, x):
            y = self.fc(x)
            z = torch.relu(y) * 2
            return z.sum(dim=1) + x.mean()

    torch.compile(M())(torch.randn(3, 8))


def _collectives() -> None:
    from datetime import timedelta

    import torch
    import torch._inductor.debug as idebug
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol

    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    rank = dist.get_rank()

    def step(x):
        y = x.sin() * 2
        if (
            rank == 1
        ):  # one more op on rank 1 (an extern mm): other tensor metadata and runtime estimates
            y = torch.mm(y.view(1, 8), torch.eye(8)).view(8)
        y = funcol.all_reduce(y, "sum", dist.group.WORLD)
        return y + 1

    f = torch.compile(step)
    with idebug.record_and_log_graph_execution_order():
        for _ in range(2):
            f(torch.randn(8))
    dist.barrier()
    dist.destroy_process_group()


def _aoti(dest: str) -> None:
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 4)

        def forward(self, x):
            return torch.relu(self.fc(x)) + 1

    ep = torch.export.export(M(), (torch.randn(2, 8),))
    # C++ sources only (no .so build, no precompiled header): the compile, its kernels and output code
    # are all in the trace, in seconds instead of a minute of g++
    torch._inductor.aoti_compile_and_package(
        ep,
        package_path=os.path.join(dest, "m.pt2"),
        inductor_configs={
            "aot_inductor.package_cpp_only": True,
            "aot_inductor.precompile_headers": False,
        },
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env(dest: str, job: str) -> dict[str, str]:
    out = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            ("TORCH_LOGS", "TORCH_TRACE", "TORCHINDUCTOR_", "TORCHDYNAMO_", "PT2LOGS_")
        )
        and k not in ("INDUCTOR_PROVENANCE", "TORCH_COMPILE_DEBUG", "LOG_TLPARSE")
    }
    out.update(
        {
            "TORCH_TRACE": os.path.join(dest, "trace"),
            "TORCHINDUCTOR_CACHE_DIR": os.path.join(dest, ".cache"),
            "TORCHINDUCTOR_COMPILE_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    if job == "provenance":
        out["INDUCTOR_PROVENANCE"] = "1"
    if job == "collectives":
        out.update({"LOG_TLPARSE": "1", "MASTER_ADDR": "127.0.0.1"})
    from tests.conftest import torch_env  # (here: the job's own processes never import it)

    out.update(torch_env())
    return out


def run(job: str, dest: str) -> int:
    """Run ``job`` into ``dest`` (``dest/trace`` the TORCH_TRACE folder); its exit code."""
    os.makedirs(dest, exist_ok=True)
    cmd = [sys.executable, HERE, job, dest]
    if job == "collectives":
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node",
            "2",
            "--nnodes",
            "1",
        ]
        cmd += ["--master-addr", "127.0.0.1", "--master-port", str(_free_port()), HERE, job, dest]
    with open(os.path.join(dest, "stderr.txt"), "wb") as err:
        return subprocess.run(
            cmd,
            env=env(dest, job),
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=dest,
            timeout=TIMEOUT_S,
        ).returncode


JOBS = ("provenance", "collectives", "aoti")  # (below the models: the tests name their lines)


def make(dest) -> None:
    """Every job, at once, into ``dest/<job>/`` (their exit codes in ``dest/rcs.json``), and
    ``dest/aoti_cut/trace``: the AOT trace cut where a crash inside AotCodeCompiler.compile would leave
    it, before the kernel code."""
    import json
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(JOBS)) as pool:
        rcs = dict(zip(JOBS, pool.map(lambda j: run(j, os.path.join(dest, j)), JOBS)))
    (dest / "rcs.json").write_text(json.dumps(rcs))
    if rcs["aoti"] == 0:
        (f,) = (dest / "aoti" / "trace").iterdir()
        data = f.read_bytes()
        cut = dest / "aoti_cut" / "trace"
        cut.mkdir(parents=True)
        data = data[: data.index(b'"name": "inductor_aot_kernel_code"')]
        (cut / f.name).write_bytes(data[: data.rindex(b"\n") + 1])


if __name__ == "__main__":
    job, dest = sys.argv[1], sys.argv[2]
    {"provenance": _provenance, "collectives": _collectives, "aoti": lambda: _aoti(dest)}[job]()

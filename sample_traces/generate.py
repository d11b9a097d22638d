#!/usr/bin/env python3
"""Generate the bundled sample PyTorch 2 compiler logs in sample_traces/.

Usage:
    python sample_traces/generate.py [--out DIR] [--only SCENARIO ...] [--no-gzip]

Every scenario runs in its own subprocess (``ddp_2rank`` under torchrun with 2 gloo
ranks) with

    TORCH_TRACE=<out>/<scenario>/trace
    TORCH_LOGS=recompiles,graph_breaks,perf_hints[,output_code]
    TORCHINDUCTOR_CACHE_DIR=<fresh temp dir>   (so FX-graph/AOT caches start empty)

and writes into <out>/<scenario>/:

    trace/dedicated_log_torch_trace_*.log.gz   TORCH_TRACE structured trace(s), gzipped
    torch_logs.txt.gz                          the subprocess's stderr (TORCH_LOGS text), gzipped
    counters.json                              torch._dynamo.utils.counters + compile_times()
                                               (ddp_2rank: counters.json is rank 0,
                                               counters.rank1.json is rank 1)

The same file is also the workload: ``generate.py --worker SCENARIO --counters PATH`` runs
one scenario in-process (that is what the driver launches). Needs only torch and the stdlib.
Runs on CPU (inductor C++ backend, needs a C++ compiler); the whole set takes a few minutes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIOS = ["recompiles", "graph_breaks", "train_step", "compile_failure", "ddp_2rank"]
BASE_LOGS = "recompiles,graph_breaks,perf_hints"
# output_code only where the generated code is small (the CPU kernels of a few tiny graphs)
TORCH_LOGS = {
    "recompiles": BASE_LOGS,
    "graph_breaks": BASE_LOGS + ",output_code",
    "train_step": BASE_LOGS,
    "compile_failure": BASE_LOGS + ",output_code",
    "ddp_2rank": BASE_LOGS,
}
SUBPROCESS_TIMEOUT_S = 600


# --------------------------------------------------------------------------------------
# Workloads (run inside the per-scenario subprocess)
# --------------------------------------------------------------------------------------


def phase(msg: str) -> None:
    # A marker on stderr so the TORCH_LOGS text can be read phase by phase. It is not a
    # glog line, so a parser treats it as foreign text.
    print(f"##### SAMPLE PHASE: {msg}", file=sys.stderr, flush=True)


def _mlp_class():
    import torch

    class MLP(torch.nn.Module):
        def __init__(self, d_in, d_hidden, d_out):
            super().__init__()
            self.fc1 = torch.nn.Linear(d_in, d_hidden)
            self.fc2 = torch.nn.Linear(d_hidden, d_hidden)
            self.out = torch.nn.Linear(d_hidden, d_out)

        def forward(self, x):
            x = torch.nn.functional.gelu(self.fc1(x))
            x = torch.nn.functional.gelu(self.fc2(x))
            return self.out(x)

    return MLP


def scenario_recompiles() -> None:
    import torch
    import torch._dynamo

    def shape_static(x):
        return torch.relu(x) * 2 + 1

    def shape_auto(x):
        return torch.sigmoid(x) - 0.5

    def cast(x):
        return torch.tanh(x) * 3

    def scale(x, k):
        return x * k + 1

    def gated(x, flag):
        if flag:
            return x.cos() + 1
        return x.sin() - 1

    def limited(x):
        return (x + 1).abs() * 2

    phase("A: dynamic=False, batch 4 -> 8 -> 12 (two static shape recompiles)")
    f = torch.compile(shape_static, dynamic=False)
    for b in (4, 8, 12):
        f(torch.randn(b, 16))

    phase("B: default dynamic, batch 4 -> 8 (recompile, automatic dynamic) -> 12 (no recompile)")
    f = torch.compile(shape_auto)
    for b in (4, 8, 12):
        f(torch.randn(b, 16))

    phase("C: dtype change float32 -> float64")
    f = torch.compile(cast)
    for dt in (torch.float32, torch.float64):
        f(torch.ones(8, dtype=dt))

    phase("D: python int constant k = 2 -> 3 (recompile, k becomes dynamic) -> 5")
    f = torch.compile(scale)
    for k in (2, 3, 5):
        f(torch.randn(8), k)

    phase("E: bool flag True -> False")
    f = torch.compile(gated)
    for flag in (True, False):
        f(torch.randn(8), flag)

    phase("F: recompile_limit=4 on one function; 5 dtypes -> limit hit on the 5th")
    # eager backend: the limit, not the generated code, is the point here
    f = torch.compile(limited, backend="eager")
    with torch._dynamo.config.patch(recompile_limit=4):
        for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32):
            f(torch.ones(8, dtype=dt))
        f(torch.ones(8, dtype=torch.int32))  # runs eagerly, no new compile attempt
    phase("done")


def scenario_graph_breaks() -> None:
    import torch
    import torch._dynamo

    class Breaky(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(16, 16)

        def forward(self, x):
            y = self.lin(x).relu()
            print("sample: print() inside a compiled forward")  # graph break 1: print
            if y.sum() > 0:  # graph break 2: data-dependent branch
                y = y * 2
            m = y.max().item()  # graph break 3: Tensor.item()
            if m > 1000.0:  # ... used in Python control flow
                y = y / m
            torch._dynamo.graph_break()  # graph break 4: explicit
            return torch.log_softmax(y, -1)

    def helper(x):
        y = x.cos()
        # graph break: unsupported C builtin; the same break each time helper is traced
        sys.getrefcount(y)
        return y.sin()

    torch.manual_seed(0)
    phase(
        "A: module with print / data-dependent branch / .item() / explicit graph_break; called twice"
    )
    m = torch.compile(Breaky())
    with torch.no_grad():
        for _ in range(2):
            m(torch.randn(4, 16))

    phase(
        "B: helper with one graph break, traced twice (float32, then float64: dtype recompile)"
        " -> second break logged as a suppressed duplicate"
    )
    h = torch.compile(helper)
    h(torch.randn(8))
    h(torch.randn(8, dtype=torch.float64))
    phase("done")


def scenario_train_step() -> None:
    import torch
    import torch._dynamo

    MLP = _mlp_class()

    torch.manual_seed(0)
    model = MLP(32, 64, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)  # the optimizer step stays eager
    cm = torch.compile(model)

    def step(b):
        x, t = torch.randn(b, 32), torch.randn(b, 1)
        loss = torch.nn.functional.mse_loss(cm(x), t)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.item()

    phase("A: 3 training steps at batch 16 (fwd compile + lazy bwd compile)")
    for _ in range(3):
        step(16)
    phase("B: batch 16 -> 32 (recompile, automatic dynamic fwd+bwd), 2 steps")
    for _ in range(2):
        step(32)
    phase("C: torch._dynamo.reset() then one step at batch 16 -> FX graph / AOTAutograd cache hits")
    # reset() also clears compile_times() and restarts frame ids (so compile id 0/0 appears
    # twice in this trace); counters survive. Keep the pre-reset compile_times text.
    from torch._dynamo.utils import compile_times

    EXTRA["compile_times_before_reset"] = compile_times(repr="str", aggregate=False)
    torch._dynamo.reset()
    step(16)
    phase("done")


def scenario_compile_failure() -> None:
    import torch
    import torch._dynamo

    def bad_backend(gm, example_inputs):
        raise RuntimeError("synthetic backend failure (sample_traces compile_failure scenario)")

    def f(x):
        return x.sin() + 1

    def g(x):
        return (x.cos() * 2).sum(-1)

    torch._dynamo.config.suppress_errors = True
    phase("A: backend raises, suppress_errors=True -> frame falls back to eager")
    cf = torch.compile(f, backend=bad_backend)
    x = torch.randn(4)
    assert torch.allclose(cf(x), f(x))  # the program goes on, eagerly
    phase("B: a frame that compiles fine with inductor")
    cg = torch.compile(g)
    cg(torch.randn(4, 8))
    phase("done")


def scenario_ddp_2rank() -> None:
    import torch
    import torch._dynamo
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    MLP = _mlp_class()

    # The process group must exist before the first structured-trace event so that the
    # trace file is named dedicated_log_torch_trace_rank_<R>_*.log and envelopes carry "rank".
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    # A user-defined forward matters: DDP.forward graph-breaks (its logger call and the
    # dynamo-disabled _inside_ddp_forward), and torch.nn's own frames are skipped as
    # top-level frames, so an nn.Sequential would never get compiled here.
    model = MLP(16, 32, 4)
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    cm = torch.compile(ddp)
    # Both ranks run the same number of steps (so the gradient all-reduces pair up), but
    # rank 1's last step uses batch 12 instead of 8: one extra recompile on rank 1 only.
    batches = [8, 8, 8, 12] if rank == 1 else [8, 8, 8, 8]
    phase(f"rank {rank}: batches {batches}")
    for b in batches:
        torch.manual_seed(100 + rank)
        loss = cm(torch.randn(b, 16)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    dist.barrier()
    phase(f"rank {rank}: done")
    dist.destroy_process_group()


# extra keys a workload wants in its counters.json
EXTRA: dict = {}

WORKLOADS = {
    "recompiles": scenario_recompiles,
    "graph_breaks": scenario_graph_breaks,
    "train_step": scenario_train_step,
    "compile_failure": scenario_compile_failure,
    "ddp_2rank": scenario_ddp_2rank,
}


def run_worker(name: str, counters_path: str) -> None:
    rank = os.environ.get("RANK")
    if rank is not None and os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        # one inductor cache per rank: otherwise rank 1 could hit rank 0's fresh FX-graph
        # cache entries depending on timing (must be set before torch reads it)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(
            os.environ["TORCHINDUCTOR_CACHE_DIR"], f"rank{rank}"
        )
    import torch
    from torch._dynamo.utils import compile_times, counters

    t0 = time.time()
    WORKLOADS[name]()
    wall = time.time() - t0
    doc = {
        "scenario": name,
        "torch": torch.__version__,
        "wall_s": round(wall, 3),
        "counters": {g: {str(k): v for k, v in c.items()} for g, c in counters.items()},
        "compile_times": compile_times(repr="str", aggregate=False),
    }
    doc.update(EXTRA)
    if rank is not None:
        doc["rank"] = int(rank)
        if int(rank) != 0:
            root, ext = os.path.splitext(counters_path)
            counters_path = f"{root}.rank{rank}{ext}"
    with open(counters_path, "w") as fh:
        json.dump(doc, fh, indent=1, default=str)
        fh.write("\n")


# --------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gzip_in_place(path: str) -> str:
    # mtime=0 and no file name in the header: the .gz depends only on the content
    with (
        open(path, "rb") as src,
        open(path + ".gz", "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as dst,
    ):
        shutil.copyfileobj(src, dst)
    os.remove(path)
    return path + ".gz"


def clean_scenario_dir(d: str) -> None:
    os.makedirs(d, exist_ok=True)
    for entry in os.listdir(d):
        p = os.path.join(d, entry)
        if entry == "trace" and os.path.isdir(p):
            shutil.rmtree(p)
        elif entry.startswith(("torch_logs.txt", "counters", "stdout.txt")):
            os.remove(p)


def run_scenario(name: str, out: str, do_gzip: bool) -> dict:
    d = os.path.join(out, name)
    clean_scenario_dir(d)
    trace_dir = os.path.join(d, "trace")
    counters_path = os.path.join(d, "counters.json")
    cache_dir = tempfile.mkdtemp(prefix=f"pt2logs_{name}_inductor_")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            (
                "TORCH_LOGS",
                "TORCH_TRACE",
                "TORCH_COMPILE_DEBUG",
                "TORCHINDUCTOR_",
                "TORCHDYNAMO_",
                "TORCHELASTIC_",
            )
        )
    }
    env.update(
        {
            "TORCH_TRACE": trace_dir,
            "TORCH_LOGS": TORCH_LOGS[name],
            "TORCHINDUCTOR_CACHE_DIR": cache_dir,
            # compile in-process: no compile-worker pool (fewer processes, steadier timing on 2 cores)
            "TORCHINDUCTOR_COMPILE_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "PYTHONHASHSEED": "0",
            "PYTHONUNBUFFERED": "1",
        }
    )
    me = os.path.abspath(__file__)
    if name == "ddp_2rank":
        env["MASTER_ADDR"] = "127.0.0.1"
        cmd = [
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
            me,
            "--worker",
            name,
            "--counters",
            counters_path,
        ]
    else:
        cmd = [sys.executable, me, "--worker", name, "--counters", counters_path]
    t0 = time.time()
    stderr_path = os.path.join(d, "torch_logs.txt")
    try:
        with open(stderr_path, "wb") as err:
            proc = subprocess.run(
                cmd,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
                cwd=out,
                timeout=SUBPROCESS_TIMEOUT_S,
            )
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    wall = time.time() - t0
    if do_gzip:
        gzip_in_place(stderr_path)
        if os.path.isdir(trace_dir):
            for f in sorted(os.listdir(trace_dir)):
                if f.endswith(".log"):
                    gzip_in_place(os.path.join(trace_dir, f))
    return {"scenario": name, "rc": rc, "wall_s": round(wall, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=HERE, help="output folder (default: this script's folder)")
    ap.add_argument(
        "--only",
        nargs="+",
        choices=SCENARIOS,
        metavar="SCENARIO",
        help=f"run only these scenarios ({', '.join(SCENARIOS)})",
    )
    ap.add_argument("--no-gzip", action="store_true", help="leave the logs uncompressed")
    ap.add_argument("--worker", choices=SCENARIOS, help=argparse.SUPPRESS)
    ap.add_argument("--counters", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        run_worker(args.worker, args.counters)
        return 0

    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    failed = 0
    t0 = time.time()
    for name in args.only or SCENARIOS:
        print(f"[generate] {name} ...", flush=True)
        r = run_scenario(name, out, not args.no_gzip)
        print(f"[generate] {name}: rc={r['rc']} {r['wall_s']}s", flush=True)
        failed += r["rc"] != 0
    print(f"[generate] total {time.time() - t0:.1f}s, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

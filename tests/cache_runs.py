"""Real torch 2.13 CPU runs that exercise the inductor caches, for the cache-miss tests.

``generate(dest)`` runs the workload three times into ``dest/<run>/`` (TORCH_TRACE, and the stderr
with the cache loggers on in ``torch_logs.txt``) with one
TORCHINDUCTOR_CACHE_DIR kept between them:

* ``cold``: an empty cache, every lookup misses;
* ``warm``: the same program again, every lookup hits;
* ``config``: ``torch._inductor.config.fallback_random = True`` (a component of the FX graph key):
  every lookup misses, and the key differs from ``warm``'s in ``inductor_config[fallback_random]`` only;
  another function is compiled first, so the same function's compile id is ``1/0`` there.

The same file is the workload: ``python cache_runs.py --worker`` (one forward+backward graph, so the
FX graph cache is looked up twice in one compile, and an AOTAutograd lookup).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

RUNS = ("cold", "warm", "config")
#: the cache lines in the stderr too (``dest/<run>/torch_logs.txt``): the FX graph cache at DEBUG (its
#: keys' components), AOTAutograd's at INFO (hit / miss; at DEBUG it would also log its components in
#: the trace, which torch 2.13 otherwise leaves out)
TORCH_LOGS = "+torch._inductor.codecache,torch._functorch._aot_autograd.autograd_cache"


def worker() -> None:
    import torch

    if os.environ.get("CACHE_RUNS_CONFIG"):
        torch._inductor.config.fallback_random = True
        # another function compiled first (eager: no cache lookups): f's compile id becomes 1/0, not 0/0,
        # so the runs' lookups can only be paired by function
        torch.compile(lambda x: x - 1, backend="eager")(torch.randn(2))

    def f(x, w):
        return torch.relu(x * w) + 1

    cf = torch.compile(f)
    cf(torch.randn(8), torch.randn(8, requires_grad=True)).sum().backward()


def generate(dest: Path) -> dict[str, float]:
    """Run the three runs in order; returns each one's wall time (s)."""
    cache = dest / "inductor_cache"
    times = {}
    for run in RUNS:
        env = {
            **os.environ,
            "TORCH_TRACE": str(dest / run),
            "TORCHINDUCTOR_CACHE_DIR": str(cache),
            "TORCHINDUCTOR_COMPILE_THREADS": "1",
            "TORCH_LOGS": TORCH_LOGS,
        }
        if run == "config":
            env["CACHE_RUNS_CONFIG"] = "1"
        (dest / run).mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        with open(dest / run / "torch_logs.txt", "wb") as err:
            subprocess.run(
                [sys.executable, __file__, "--worker"], env=env, check=True, timeout=300, stderr=err
            )
        times[run] = time.monotonic() - t0
    return times


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        worker()
    else:
        print(generate(Path(sys.argv[1])))

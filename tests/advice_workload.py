"""A small real torch.compile workload for tests/test_advice.py: one function per advice row (and
cases where a row must not fire). Run as ``python tests/advice_workload.py`` with TORCH_TRACE set;
eager backend where the generated code is not the point, so it takes seconds on a CPU."""

from __future__ import annotations

import logging
import sys

import torch
import torch._dynamo

log = logging.getLogger("advice_workload")


def storm(x):  # shape storm under dynamic=False, then the recompile limit
    return x * 2 + 1


def auto(x):  # one size change, then automatic dynamic shapes: no storm
    return x - 1


def offset(x, off):  # a Python int the graph is specialised on
    return x + off


def item(x):  # .item() breaks the graph
    return x * x.sum().item()


def printing(x):  # print in the graph
    print("advice workload: inside the compiled region")
    return x + 1


def logs(x):  # logging in the graph
    log.warning("advice workload: logging inside the compiled region")
    return x + 2


def branch(x):  # data-dependent branch
    if x.sum() > 0:
        return x * 3
    return x


@torch.compiler.disable
def _disabled(x):
    return x.cos()


def on_purpose(x):  # a torch.compiler.disable'd call: a break on purpose, no advice
    return _disabled(x) + 1


def refcount(x):  # a C builtin dynamo cannot trace (skipped)
    y = x.cos()
    sys.getrefcount(y)
    return y.sin()


def grad(x):  # requires_grad change
    return x * 2


def apply(fn, x):  # another function object each call
    return fn(x) + 1


def cast(x):  # dtype change
    return x.tanh()


def explicit(x):  # an explicit graph_break(): no advice row
    y = x + 1
    torch._dynamo.graph_break()
    return y * 2


def bad_backend(gm, inputs):
    raise RuntimeError("advice workload: synthetic backend failure")


def failing(x):
    return x.sin() + 2


def main() -> None:
    f = torch.compile(storm, dynamic=False, backend="eager")
    with torch._dynamo.config.patch(recompile_limit=4):
        for n in range(2, 9):
            f(torch.ones(n))
    f = torch.compile(auto, backend="eager")
    for n in (4, 8, 12):
        f(torch.ones(n))
    f = torch.compile(offset, backend="eager")
    for off in (3, 4):
        f(torch.ones(4), off)
    for fn in (item, printing, logs, branch, on_purpose, explicit):
        torch.compile(fn, backend="eager")(torch.ones(4))
    torch.compile(refcount, backend="eager")(torch.ones(4))
    f = torch.compile(grad, backend="eager")
    f(torch.ones(4))
    f(torch.ones(4, requires_grad=True))
    f = torch.compile(apply, backend="eager")
    f(lambda t: t + 1, torch.ones(4))
    f(lambda t: t * 2, torch.ones(4))
    f = torch.compile(cast, backend="eager")
    for dt in (torch.float32, torch.float64):
        f(torch.ones(4, dtype=dt))
    with torch._dynamo.config.patch(suppress_errors=True):
        torch.compile(failing, backend=bad_backend)(torch.ones(4))
    print("advice workload: done", file=sys.stderr)


if __name__ == "__main__":
    main()

"""A small real torch.compile workload for tests/test_dynamic_shapes.py: dynamic shapes and their
specializations, data-dependent guards. Run as ``python tests/shapes_workload.py`` with TORCH_DTRACE
set (TORCH_TRACE plus the records torch writes only then: guard_added, guard_on_data_dependent_error);
eager backend (the shapes are decided by dynamo, not by the backend), so it takes seconds on a CPU.
(reduce-overhead on a CPU logs nothing about CUDA graphs: cudagraph_skip_reason stays null; the
``cudagraphs`` backend does, from torch's own checks: cpu device.)"""

from __future__ import annotations

import contextlib

import torch
import torch._dynamo


def specialized(x):  # a dim marked dynamic, then a branch on its value: specialized (or an error)
    if x.shape[0] == 8:
        return x * 2
    return x + 1


def stays_dynamic(x):  # a dim marked dynamic that stays a symbol
    return x.sum(0) * x.shape[0]


def unbacked(
    x,
):  # .item() captured (capture_scalar_outputs): an unbacked symbol, then a guard on it
    n = x.sum().item()
    torch._check(n >= 0)
    return torch.zeros(int(n) + 1)


def nonzero(x):  # a data-dependent output shape (capture_dynamic_output_shape_ops)
    return torch.nonzero(x).float().sum()


def data_dependent_branch(x):  # a branch on an unbacked int: guard_on_data_dependent_error
    n = x.sum().int().item()
    if n > 3:
        return x + 1
    return x - 1


def data_dependent_fullgraph(
    x,
):  # the same branch under fullgraph=True: a failed compile (UserError)
    n = x.sum().int().item()
    if n > 3:
        return x + 1
    return x - 1


def mutated(x, buf):  # a mutated input, under the cudagraphs backend on a CPU: skipped (cpu device)
    buf.add_(1)
    return x * 2


def main() -> None:
    # a mark_dynamic dim that gets specialized: dynamo raises ConstraintViolationError for it; the
    # compile fails and the frame runs eagerly (the trace logs the specialization first)
    x = torch.randn(8, 3)
    torch._dynamo.mark_dynamic(x, 0)
    with contextlib.suppress(Exception):
        torch.compile(specialized, backend="eager")(x)
    # maybe_mark_dynamic: the same specialization allowed (no error)
    x = torch.randn(8, 3)
    torch._dynamo.maybe_mark_dynamic(x, 0)
    torch.compile(specialized, backend="eager")(x)

    y = torch.randn(5, 4)
    torch._dynamo.mark_dynamic(y, 0)
    torch.compile(stays_dynamic, backend="eager")(y)

    torch._dynamo.config.capture_scalar_outputs = True
    torch._dynamo.config.capture_dynamic_output_shape_ops = True
    torch.compile(unbacked, backend="eager")(torch.tensor([1.0, 2.0]))
    torch.compile(nonzero, backend="eager")(torch.tensor([0.0, 1.0, 2.0]))
    torch.compile(data_dependent_branch, backend="eager")(torch.tensor([1.0, 5.0]))
    with contextlib.suppress(Exception):
        torch.compile(data_dependent_fullgraph, backend="eager", fullgraph=True)(
            torch.tensor([2.0, 5.0])
        )

    # CUDA graphs on a CPU: torch's own check_for_skip says why not (cudagraph_skip_reason, [__cudagraphs])
    torch.compile(mutated, backend="cudagraphs")(torch.randn(4), torch.zeros(4))


if __name__ == "__main__":
    main()

"""Graph-break bodies: every real payload in the fixtures, literal cases of each format, fuzz."""

from __future__ import annotations

import collections
import re
from functools import lru_cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.analysis.fixture_text import log_files, messages, records, trace_files

from pt2logs.analysis.graph_breaks import parse_graph_break

_AT = re.compile(r"in user code at (.+):(\d+)\s*$", re.M)


@lru_cache(maxsize=1)
def fixture_payloads() -> tuple[tuple[str, str], ...]:
    """(origin, body) of every graph-break report in the fixtures (traces and TORCH_LOGS)."""
    out: list[tuple[str, str]] = []
    for path in trace_files():
        for env, payload in records(path):
            art = env.get("artifact")
            if isinstance(art, dict) and art.get("name") == "dynamo_graph_break_reason":
                out.append((f"{path.name} artifact", payload))
    for path in log_files():
        out += [
            (f"{path.name} [__graph_breaks]", body) for body in messages(path, {"graph_breaks"})
        ]
    return tuple(out)


def test_every_fixture_payload() -> None:
    payloads = fixture_payloads()
    assert sum("artifact" in origin for origin, _ in payloads) >= 10
    assert len(payloads) >= 40
    for origin, body in payloads:
        r = parse_graph_break(body)
        assert r["gb_type"], origin
        assert isinstance(r["hints"], list) and isinstance(r["user_stack"], list)
        at = _AT.search(body)
        if at:
            assert (r["user_filename"], r["user_lineno"]) == (at.group(1), int(at.group(2))), origin
        link = re.search(r"/gb/(gb\d{4})\.html", body)
        assert r["gb_id"] == (link.group(1) if link else None)
        assert r["is_duplicate"] == ("user stack suppressed" in body.split("\n", 1)[0])
        if "User code traceback:" in body:
            assert r["user_stack"] and r["user_stack"][-1].startswith(f"{r['user_filename']}:")
        if link:  # structured (torch 2.7+): the type is one line, with an explanation
            assert "\n" not in r["gb_type"] and r["explanation"]
            assert not r["gb_type"].startswith("Encountered graph break")


def test_trace_payload_types() -> None:
    types = collections.Counter(
        parse_graph_break(body)["gb_type"]
        for origin, body in fixture_payloads()
        if "artifact" in origin
    )
    assert set(types) == {
        "Dynamic shape operator",
        "Failed to trace builtin operator",
        "Data-dependent branching",
        "Unsupported Tensor.item() call with capture_scalar_outputs=False",
        "Call to `torch._dynamo.graph_break()`",
        "copy.deepcopy()",
    }


ENCOUNTERED = """Graph break in user code at /home/alice/bench/scenarios.py:73
Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):

copy.deepcopy()
  Explanation: Dynamo does not support copy.deepcopy()
  Hint: Avoid calling copy.deepcopy()
  Hint: It may be possible to write Dynamo tracing rules for this code. Please report an issue to PyTorch if you encounter this graph break often and it is causing performance issues.

  Developer debug context: copy.deepcopy(TensorVariable())

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0179.html

User code traceback:
  File "/home/alice/bench/scenarios.py", line 154, in <module>
    globals()[name]()
  File "/home/alice/bench/scenarios.py", line 77, in graph_breaks
    f(torch.randn(10, device=dev))
  File "/home/alice/bench/scenarios.py", line 73, in uses_builtin
    z = copy.deepcopy(y)

Traceback (most recent call last):
  File "/opt/torch/.venv/lib/python3.12/site-packages/torch/_dynamo/symbolic_convert.py", line 1001, in wrapper
    return inner_fn(self, inst)
           ^^^^^^^^^^^^^^^^^^^^
torch._dynamo.exc.Unsupported: copy.deepcopy()
  Explanation: Dynamo does not support copy.deepcopy()
"""  # gpu/graph_breaks trace, torch 2.11 (traceback shortened)

DATA_DEPENDENT = """Graph break in user code at /home/alice/bench/workload.py:33
Graph Break Reason: Data-dependent branching
  Explanation: Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`). Dynamo does not support tracing dynamic control flow.

      The branch condition involves a tensor computed as follows:
        # File "/home/alice/bench/workload.py", line 33, in torch_dynamo_resume_in_forward_at_32, code: if y.sum() > 0:  # graph break 2: data-dependent branch
        gt = gt(sum_1, 0)
\x20\x20\x20\x20
  Hint: This graph break is fundamental - it is unlikely that Dynamo will ever be able to trace through your code. Consider finding a workaround.
  Hint: Use `torch.cond` to express dynamic control flow.

  Developer debug context: attempted to jump with TensorVariable()

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html
"""  # torch_logs/graph_breaks.txt, torch 2.13 (one hint dropped)

DUPLICATE = """Graph break (user stack suppressed due to duplicate graph break) in user code at /home/alice/bench/scenarios.py:62
Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):

Unsupported Tensor.item() call with capture_scalar_outputs=False
  Explanation: Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False.
  Hint: Set `torch._dynamo.config.capture_scalar_outputs = True` or `export TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1` to include these operations in the captured graph.

  Developer debug context: call_method TensorVariable() item () {}

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html"""  # gpu/graph_breaks/torch_logs.txt

REASON_2_6 = """Graph break in user code at /home/zong/code/pytorch/../scripts/dynamo.py:6
Reason: Unsupported: 'skip function graph_break in file /home/zong/code/pytorch/torch/_dynamo/decorators.py'
User code traceback:
  File "/home/zong/code/pytorch/../scripts/dynamo.py", line 11, in fn001
    return fn002(x)
  File "/home/zong/code/pytorch/../scripts/dynamo.py", line 6, in fn002"""  # pytorch#141553, 2024-11

FROM_USER_CODE_2_4 = """Graph break: from user code at:
  File "/data/users/williamwen/pytorch3/playground4.py", line 18, in h
    torch._dynamo.graph_break()
Traceback (most recent call last):
  File "/data/users/williamwen/pytorch3/torch/_dynamo/symbolic_convert.py", line 494, in wrapper
    return inner_fn(self, inst)
    raise Unsupported(msg)
torch._dynamo.exc.Unsupported: call torch._dynamo.disable() wrapped function <function g at 0x7f38811485e0>"""  # pytorch#126722, 2024-05 (traceback shortened)

INLINE_2023 = """Graph break: call_function BuiltinVariable(iadd) [ConstantVariable(tuple), TupleVariable()] {} from user code at   File "/home/ezyang/local/c/pytorch-env/lib/python3.9/site-packages/transformers/models/bart/modeling_bart.py", line 1839, in forward
    outputs = self.model.decoder(
  File "/data/users/ezyang/c/pytorch/torch/nn/modules/module.py", line 1501, in _call_impl
    return forward_call(*args, **kwargs)
  File "/home/ezyang/local/c/pytorch-env/lib/python3.9/site-packages/transformers/models/bart/modeling_bart.py", line 1114, in forward
    next_decoder_cache += (layer_outputs[3 if output_attentions else 1],)"""  # pytorch#97884, 2023-03

NO_LINK_2_8 = """Graph break in user code at /usr/local/lib/python3.12/dist-packages/torch/_dynamo/polyfills/__init__.py:241
Graph Break Reason: Unsupported method call
  Explanation: Dynamo does not know how to trace method `__eq__` of class `<unknown type>`
  Hint: Avoid calling `<unknown type>.__eq__` in your code.
  Hint: Please report an issue to PyTorch.

  Developer debug context: call_method GetAttrVariable(AutogradFunctionVariable(), setup_context) __eq__"""  # pytorch#160757, 2025-08

GRACEFUL = """Graph break in user code at /tmp/study/gen/gb.py:8
Graph Break Reason: Failed to handle graph break gracefully. Skipping the function and falling back to eager. Graph break encountered:

Call to `torch._dynamo.graph_break()`
  Explanation: User-inserted graph break. Message: None
  Hint: Remove the `torch._dynamo.graph_break()` call.

  Developer debug context: Called `torch._dynamo.graph_break()` with args `[]`, kwargs `{}`

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0025.html

User code traceback:
  File "/tmp/study/gen/gb.py", line 22, in <module>
    torch.compile(f, backend="eager")(torch.randn(3))
  File "/tmp/study/gen/gb.py", line 8, in f2
    torch._dynamo.graph_break()
"""  # torch 2.13 CPU, graph break inside try/finally


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (ENCOUNTERED, {"gb_id": "gb0179", "gb_type": "copy.deepcopy()", "user_lineno": 73, "explanation": "Dynamo does not support copy.deepcopy()", "is_duplicate": False}),
        (DATA_DEPENDENT, {"gb_id": "gb0170", "gb_type": "Data-dependent branching", "user_filename": "/home/alice/bench/workload.py", "user_lineno": 33, "user_stack": []}),
        (DUPLICATE, {"gb_type": "Unsupported Tensor.item() call with capture_scalar_outputs=False", "is_duplicate": True, "user_lineno": 62, "user_stack": []}),
        (REASON_2_6, {"gb_id": None, "gb_type": "skip function graph_break", "user_lineno": 6, "explanation": None, "hints": []}),
        (FROM_USER_CODE_2_4, {"gb_type": "call torch._dynamo.disable", "user_filename": "/data/users/williamwen/pytorch3/playground4.py", "user_lineno": 18, "user_stack": ["/data/users/williamwen/pytorch3/playground4.py:18 in h"]}),
        (INLINE_2023, {"gb_type": "call_function BuiltinVariable", "reason": "call_function BuiltinVariable(iadd) [ConstantVariable(tuple), TupleVariable()] {}", "user_lineno": 1114}),
        (NO_LINK_2_8, {"gb_id": None, "gb_type": "Unsupported method call", "hints": ["Avoid calling `<unknown type>.__eq__` in your code.", "Please report an issue to PyTorch."]}),
        (GRACEFUL, {"gb_type": "Call to `torch._dynamo.graph_break()`", "user_lineno": 8, "user_stack": ["/tmp/study/gen/gb.py:22 in <module>", "/tmp/study/gen/gb.py:8 in f2"]}),
    ],
)  # fmt: skip
def test_literal_formats(text: str, expected: dict) -> None:
    r = parse_graph_break(text)
    assert {k: r[k] for k in expected} == expected


def test_explanation_and_hints() -> None:
    r = parse_graph_break(DATA_DEPENDENT)
    assert r["explanation"].startswith("Detected data-dependent branching")
    assert "gt = gt(sum_1, 0)" in r["explanation"] and "Hint" not in r["explanation"]
    assert r["hints"] == [
        "This graph break is fundamental - it is unlikely that Dynamo will ever be able to trace "
        "through your code. Consider finding a workaround.",
        "Use `torch.cond` to express dynamic control flow.",
    ]
    enc = parse_graph_break(ENCOUNTERED)
    assert len(enc["hints"]) == 2  # the repeat inside the internal traceback is not counted
    assert enc["reason"].startswith("Encountered graph break") and "User code" not in enc["reason"]


@settings(deadline=None, max_examples=300)
@given(
    st.one_of(
        st.text(max_size=400),
        st.lists(
            st.sampled_from(
                [
                    "Graph break in user code at /a.py:3",
                    "Graph Break Reason: x",
                    "Reason: Unsupported: y(z)",
                    "  Explanation: e",
                    "  Hint: h",
                    "User code traceback:",
                    '  File "/a.py", line 3, in f',
                    "Traceback (most recent call last):",
                    "torch._dynamo.exc.Unsupported: m",
                    "Graph break: from user code at:",
                    "",
                    "https://x/gb/gb0001.html",
                ]
            ),
            max_size=12,
        ).map("\n".join),
    )
)
def test_never_raises(text: str) -> None:
    r = parse_graph_break(text)
    assert set(r) == {
        "gb_id",
        "gb_type",
        "reason",
        "user_filename",
        "user_lineno",
        "explanation",
        "hints",
        "is_duplicate",
        "user_stack",
        "frames",
    }
    assert r["user_lineno"] is None or isinstance(r["user_lineno"], int)

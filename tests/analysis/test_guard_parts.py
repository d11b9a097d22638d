"""A failed guard's parts (kind, source, expected, actual) on the real guard texts of the fixtures."""

from __future__ import annotations

import pytest
from tests.analysis.test_guards import CASES, all_fixture_reasons

from pt2logs.analysis.guard_parts import guard_parts

PARTS = [
    # (real guard text, kind, source, expected, actual); sources as in tests/analysis/test_guards.py
    ("tensor 'L['x']' size mismatch at index 1. expected 8, actual 16", "size", "x.size()[1]", "8", "16"),  # the example (torch 2.5 form)
    ("0/0: tensor 'x' size mismatch at index 1. expected 8, actual 16", "size", "x.size()[1]", "8", "16"),  # the same guard, torch >= 2.6
    ("0/0: tensor 'x' stride mismatch at index 0. expected 4, actual 1", "stride", "x.stride()[0]", "4", "1"),
    ("0/1: tensor 'x' rank mismatch. expected 1, actual 2", "ndim", "x.dim()", "1", "2"),
    ("0/1: tensor 'x' dtype mismatch. expected Float, actual Double", "dtype", "x.dtype", "Float", "Double"),
    ("0/4: tensor 'x' requires_grad mismatch. expected requires_grad=0", "requires_grad", "x.requires_grad", "0", "1"),
    ("L['offset'] == 3", "equals", "offset", "3", None),  # the example
    ("0/0: k == 1                                                   # return x * k  # e/alice/bench/scenarios.py:83 in f", "equals", "k", "1", None),
    ("9/0: L['self']._modules['self_attn'].layer_idx == 0", "equals", "self._modules['self_attn'].layer_idx", "0", None),
    ("0/0: len(xs) == 2                                             # def lst(xs): return sum(xs)  # mp/study/gen/provoke.py:82 in lst", "len_equals", "xs", "2", None),
    ("0/1: ___check_type_id(y, 140224263180800), type=<class 'float'>  # def t(x, y): return x + y  # mp/study/gen/provoke.py:52 in t (HINT: type float)", "type_id", "y", "<class 'float'>", None),
    ("1/36: ___check_obj_id(self._modules['attn'].processor, 140462015041104)", "obj_id", "self._modules['attn'].processor", "140462015041104", None),
    ("0/0: GLOBAL_STATE changed: grad_mode ", "global_state", "grad_mode", None, None),
    ("0/1: 2 <= x.size()[0] <= 16  # if x.shape[0] > 16: return x * 2  # mp/study/gen/provoke.py:56 in d", "symbolic", "x.size()[0]", "2 <= x.size()[0] <= 16", None),
    ("torch._dynamo hit config.recompile_limit (4)", "recompile_limit", "recompile_limit", "4", None),
    ("0/0: ___check_torch_function_mode_stack()", "config", "torch_function_mode", None, None),
]  # fmt: skip


@pytest.mark.parametrize(("text", "kind", "source", "expected", "actual"), PARTS)
def test_guard_parts(
    text: str, kind: str, source: str, expected: str | None, actual: str | None
) -> None:
    assert guard_parts(text) == (kind, source, expected, actual)


def test_one_guard_reads_the_same_under_every_torch() -> None:
    """torch <= 2.5 writes L['x'], later ones x: the identity (kind, source) is the same."""
    old = guard_parts("1/0: tensor 'L['x']' size mismatch at index 1. expected 128, actual 256")
    new = guard_parts("1/0: tensor 'x' size mismatch at index 1. expected 128, actual 256")
    assert old == new


@pytest.mark.parametrize(("text", "cause", "subject"), CASES)
def test_every_classified_guard_has_parts(text: str, cause: str, subject: str | None) -> None:
    kind, source, _, _ = guard_parts(text)
    if cause == "other":
        assert kind in (None, "other")
    else:
        assert kind not in (None, "other"), text
        assert source is not None or cause == "recompile_limit_hit", text


def test_every_fixture_reason_has_a_kind() -> None:
    reasons = all_fixture_reasons()
    assert len(reasons) > 20
    for text, where in reasons.items():
        kind, source, _, _ = guard_parts(text)
        assert kind not in (None, "other") or not text.strip(), (where, text)

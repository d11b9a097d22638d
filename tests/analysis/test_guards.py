"""Recompile reasons: splitting, the TORCH_LOGS message, and the cause taxonomy on real strings."""

from __future__ import annotations

import collections
import json
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.analysis.fixture_text import log_files, messages, records, trace_files  # noqa: I001
from tests.conftest import FIXTURES

from pt2logs.analysis.guards import (
    CAUSES,
    classify_guard,
    parse_recompile_limit_message,
    parse_recompiles_message,
    split_recompile_reasons,
)

# Reasons in the fixtures that are expected to be "other" (none so far).
DOCUMENTED_OTHER: set[str] = set()


def trace_records() -> Iterator[tuple[Path, dict, str]]:
    """(file, envelope, payload) of every TORCH_TRACE record in the fixtures."""
    for path in trace_files():
        for env, payload in records(path):
            yield path, env, payload


def torch_logs_messages(artifacts: set[str]) -> Iterator[tuple[Path, str]]:
    """Bodies of TORCH_LOGS messages of the given artifacts, prefix removed."""
    for path in log_files():
        for body in messages(path, artifacts):
            yield path, body


@lru_cache(maxsize=1)
def all_fixture_reasons() -> dict[str, str]:
    """Every distinct recompile reason text in the fixtures -> where it was first seen."""
    found: dict[str, str] = {}
    for path, env, payload in trace_records():
        art = env.get("artifact")
        if isinstance(art, dict) and art.get("name") == "recompile_reasons":
            for _, text in split_recompile_reasons(payload):
                found.setdefault(text, f"{path.name} recompile_reasons")
        for key in ("compilation_metrics", "bwd_compilation_metrics"):
            metrics = env.get(key)
            if isinstance(metrics, dict) and metrics.get("recompile_reason"):
                found.setdefault(metrics["recompile_reason"], f"{path.name} {key}")
    for row in json.loads((FIXTURES / "torch_logs/compilation_metrics.json").read_text()):
        if row.get("recompile_reason"):
            found.setdefault(row["recompile_reason"], "compilation_metrics.json")
    for path, body in torch_logs_messages({"recompiles", "recompiles_verbose"}):
        for _, text in parse_recompiles_message(body)["reasons"]:
            found.setdefault(text, f"{path.name} [__recompiles]")
    texts = [p for p in FIXTURES.glob("torch_logs/**/*.txt")] + list(FIXTURES.glob("gpu/*/*.txt"))
    for path in texts:
        for line in path.read_text(encoding="utf-8", errors="replace").split("\n"):
            if m := re.search(r"(?:last reason|   reasons):\s*(.*)$", line):
                found.setdefault(m.group(1), f"{path.name} limit warning")
            if m := re.search(r"torch\._dynamo hit config\.\w+ \(\d+\)", line):
                found.setdefault(m.group(0), f"{path.name} limit warning")
            if m := re.search(r"__recompiles: \[DEBUG\] (\(.*\))$", line):  # torch 2.0-2.1
                for _, text in parse_recompiles_message(m.group(1))["reasons"]:
                    found.setdefault(text, f"{path.name} 2023 tuple")
    return found


# (real guard text, cause, subject). Sources: F = fixtures (gpu/ torch 2.11, torch_logs/ 2.13,
# wild_pastes/ 2022-2025); G = torch 2.13.0 CPU run here; I = public issue threads (year).
CASES = [
    ("0/0: tensor 'x' size mismatch at index 0. expected 8, actual 16", "shape_mismatch", "x"),  # F
    ("1/0: tensor 'L['x']' size mismatch at index 1. expected 128, actual 256", "shape_mismatch", "x"),  # F 2024
    ("0/0: tensor 'x' stride mismatch at index 0. expected 4, actual 1", "shape_mismatch", "x"),  # G
    ("0/0: tensor 's._parameters['w']' size mismatch at index 0. expected 3, actual 4. Guard failed on a parameter, consider using torch._dynamo.config.force_parameter_static_shapes = False to allow dynamism on parameters.", "shape_mismatch", "s.w"),  # G
    ("0/1: tensor 'x' rank mismatch. expected 1, actual 2", "ndim_mismatch", "x"),  # F
    ("0/3: tensor 'x' rank mismatch. expected 2, actual 1", "ndim_mismatch", "x"),  # F
    ("0/1: tensor 'x' dtype mismatch. expected Float, actual Double", "dtype_mismatch", "x"),  # F
    ("6/3: tensor 'x' dtype mismatch. expected Half, actual Long", "dtype_mismatch", "x"),  # F
    ("0/0: tensor 'x' dispatch key set mismatch. expected DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, AutogradCPU), actual DispatchKeySet(Meta, BackendSelect, ADInplaceOrView, AutogradMeta)", "device_mismatch", "x"),  # G
    ("0/0: tensor 'x' dispatch key set mismatch. expected DispatchKeySet(Meta, BackendSelect, ADInplaceOrView, AutogradMeta), actual DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, AutogradCPU)", "device_mismatch", "x"),  # G
    ("0/4: tensor 'x' requires_grad mismatch. expected requires_grad=0", "requires_grad_mismatch", "x"),  # F
    ("0/1: tensor 's._modules['l1']._parameters['weight']' requires_grad mismatch. expected requires_grad=1. Guard failed on a parameter, consider using torch._dynamo.config.force_parameter_static_shapes = False to allow dynamism", "requires_grad_mismatch", "s.l1.weight"),  # G
    ("0/0: k == 1                                                   # return x * k  # e/alice/bench/scenarios.py:83 in f", "python_value_changed", "k"),  # F
    ("0/1: flag == True                                             # if flag:  # e/alice/bench/scenarios.py:82 in f", "python_value_changed", "flag"),  # F
    ("9/0: L['self']._modules['self_attn'].layer_idx == 0", "python_value_changed", "self.self_attn.layer_idx"),  # F 2025
    ("1/0: L['packed_indices']['max_seqlen_in_batch_kv'] == 31868", "python_value_changed", "packed_indices['max_seqlen_in_batch_kv']"),  # F 2024
    ("16/7: L['self']._modules['mixer']._modules['conv'].layer_idx == (8, 'conv')", "python_value_changed", "self.mixer.conv.layer_idx"),  # F 2024
    ("3/1: ___as_tensor(___stack1).item() == 6.466017246246338  # (unknown source ___as_tensor(___stack1).item(), please file a bug)", "python_value_changed", "___stack1"),  # F
    ("L['end'] == 10                                                # for i in range(start+1, end):  # <ipython-input-6-4764417fa0ae>:9 in accumulate", "python_value_changed", "end"),  # I 2023
    ("0/0: mode == 'a'                                              # def s(x, mode): return x + (1 if mode == \"a\" else 2)  # mp/study/gen/provoke.py:78 in s", "python_value_changed", "mode"),  # G
    ("0/0: len(xs) == 2                                             # def lst(xs): return sum(xs)  # mp/study/gen/provoke.py:82 in lst", "python_value_changed", "xs"),  # G
    ("0/0: ___check_obj_id(fn, 140439264606080)                   ", "type_or_id_changed", "fn"),  # F tlparse
    ("1/36: ___check_obj_id(self._modules['attn'].processor, 140462015041104)", "type_or_id_changed", "self.attn.processor"),  # F 2025
    ("16/2: ___check_type_id(L['self']._modules['mixer'], 157671424)    ", "type_or_id_changed", "self.mixer"),  # F 2024
    ("0/1: ___check_type_id(y, 140224263180800), type=<class 'float'>  # def t(x, y): return x + y  # mp/study/gen/provoke.py:52 in t (HINT: type float)", "type_or_id_changed", "y"),  # G
    ("0/0: Duplicate tensors found: [\"x\", \"y\"]", "type_or_id_changed", "x"),  # G
    ("0/0: expected type of 'y' to be a tensor type, ' but found <class 'NoneType'>", "type_or_id_changed", "y"),  # G
    ("set(kwargs.keys()) == {'output_attentions', 'return_dict', 'input_features', 'output_hidden_states'}", "type_or_id_changed", "kwargs"),  # F 2022
    ("0/0: GLOBAL_STATE changed: grad_mode ", "dispatch_key_or_grad_mode", "grad_mode"),  # G
    ("0/0: GLOBAL_STATE changed: autocast(cpu)_enabled ", "dispatch_key_or_grad_mode", "autocast(cpu)_enabled"),  # G
    ("___check_global_state()", "dispatch_key_or_grad_mode", "global_state"),  # I 2024
    ("tensor 'L['input_ids']' dispatch key set mismatch. expected DispatchKeySet(HPU, BackendSelect), actual DispatchKeySet(HPU, BackendSelect, ADInplaceOrView). ", "dispatch_key_or_grad_mode", "input_ids"),  # I 2024
    ("0/0: tensor 'x' dispatch key set mismatch. expected DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, AutogradCPU), actual DispatchKeySet(CPU, BackendSelect, FuncTorchDynamicLayerBackMode, ADInplaceOrView, AutogradCPU, FuncTorchBatched, FuncTorchDynamicLayerFrontMode)", "dispatch_key_or_grad_mode", "x"),  # G
    ("0/0: G['G'] == 1                                                   # def h(x): return x + G  # mp/study/gen/provoke.py:38 in h", "global_or_config_changed", "G"),  # G
    ("0/0: ___check_type_id(G['OBJ'], 94427553322032), type=<class '__main__.Cfg'>  # def h2(x): return x + (1 if isinstance(OBJ, Cfg) else 0)  # mp/study/gen/provoke.py:46 in h2 (HINT: type Cfg)", "global_or_config_changed", "OBJ"),  # G
    ("0/0: ___check_torch_function_mode_stack()", "global_or_config_changed", "torch_function_mode"),  # G
    ("0/0: GLOBAL_STATE changed: deterministic_algorithms ", "global_or_config_changed", "deterministic_algorithms"),  # G
    ("0/0: BACKEND_MATCH failure: torch.compile detected different backend callables. Cached backend: _TorchCompileWrapper(compiler='eager', dynamic=None) (id=0x7f06cb16ec10). New backend: _TorchCompileWrapper(compiler='aot_eager', dynamic=None) (id=0x7f06ca7e2f90). If this is unexpected, wrap your backend in functools.partial (or reuse the same cached backend) to avoid creating a new backend function each time. More details: https://github.com/pytorch/pytorch/issues/168373", "global_or_config_changed", "backend"),  # G
    ("0/1: 2 <= x.size()[0] <= 16  # if x.shape[0] > 16: return x * 2  # mp/study/gen/provoke.py:56 in d (user code shown is first use of this value--the guard itself is not due user code but due to 0/1 specialization in the fram", "dynamic_shape_guard", "x"),  # G
    ("0/1: y.size()[0] == x.size()[0]  # (unknown var s17, please file a bug)", "dynamic_shape_guard", "y"),  # G
    ("0/1: (12 % n) == 0  # run(\"dynamic_list\", lambda x, n: x.reshape(n, -1), [(torch.randn(12), 2), (torch.randn(12), 3), (torch.randn(12), 5)])  # mp/study/gen/provoke2.py:99 in <lambda> (_prims_common/__init__.py:1118 in infer_size)", "dynamic_shape_guard", "n"),  # G
    ("0/0: y.size()[0] == x.size()[0]  # duck sizing added this equality because these variables had the same size 4 (to avoid this specialization, set torch.fx.experimental._config.use_duck_shape = False)", "dynamic_shape_guard", "y"),  # G
    ("Eq(L['x'].size()[0], 5) & Eq(L['x'].size()[2], 2) & Eq(L['x'].size()[3], 3)", "dynamic_shape_guard", "x"),  # I 2023
    ("1/0: topk_index._base.size()[0] == topk_index.size()[0]  # (unknown var s1, please file a bug)", "dynamic_shape_guard", "topk_index._base"),  # I 2025
    ("torch._dynamo hit config.recompile_limit (4)", "recompile_limit_hit", "recompile_limit"),  # F
    ("torch._dynamo hit config.cache_size_limit (8)", "recompile_limit_hit", "cache_size_limit"),  # F 2024
    ("Dynamo recompile limit exceeded", "recompile_limit_hit", None),  # F fail_reason gb_type
    ("0/0: ", "other", None),  # I 2025 (pytorch#164992: an empty reason)
    ("name 'Trunc' is not defined", "other", None),  # I 2024: a broken guard
]  # fmt: skip


@pytest.mark.parametrize(("text", "cause", "subject"), CASES)
def test_classify_real_guards(text: str, cause: str, subject: str | None) -> None:
    assert classify_guard(text) == (cause, subject)


def test_every_cause_has_two_real_cases() -> None:
    counts = collections.Counter(cause for _, cause, _ in CASES)
    assert set(counts) == set(CAUSES)
    assert min(counts.values()) >= 2


@pytest.mark.parametrize(
    ("text", "cause", "subject"),
    [  # shapes from torch's source (guards.cpp / guards.py) not seen in a captured log
        ("tensor 'x' Tensor device index mismatch. Expected device index to be 0, actual 1", "device_mismatch", "x"),
        ("not ___dict_contains('a', L['d'])", "type_or_id_changed", "d"),
        ("___odict_getitem(L['self']._modules, 'l1').training == True", "python_value_changed", "self.l1.training"),
        ("L['x'] is None", "python_value_changed", "x"),
        ("utils_device.CURRENT_DEVICE == None", "global_or_config_changed", "default_device"),
        ("Ne(s77, 1)", "dynamic_shape_guard", "s77"),
        ("2*s0 < 100", "dynamic_shape_guard", "s0"),
        ("['___check_obj_id(self, 140428219191360)']", "type_or_id_changed", "self"),  # 2022 list form
        ("0/0: tensor 'x' size mismatch at index 0. expected 4, actual 8; k == 2", "shape_mismatch", "x"),
        ("", "other", None),
        ("Unable to find recompilation reasons", "other", None),
    ],
)  # fmt: skip
def test_classify_grammar(text: str, cause: str, subject: str | None) -> None:
    assert classify_guard(text) == (cause, subject)


def test_no_fixture_reason_is_other() -> None:
    reasons = all_fixture_reasons()
    assert len(reasons) >= 40
    classified = {text: classify_guard(text) for text in reasons}
    others = {t: reasons[t] for t, (cause, _) in classified.items() if cause == "other"}
    assert set(others) <= DOCUMENTED_OTHER, others
    causes = collections.Counter(cause for cause, _ in classified.values())
    assert {"shape_mismatch", "dtype_mismatch", "python_value_changed"} <= set(causes)
    assert all(subject for cause, subject in classified.values() if cause != "recompile_limit_hit")


def test_split_json_list_string_and_plain_text() -> None:
    one = '"0/0: k == 1                                                   # return x * k  # e/alice/bench/scenarios.py:83 in f\\nUser stack trace:\\n  File \\"/home/alice/bench/scenarios.py\\", line 83, in f\\n    return x * k"'
    assert split_recompile_reasons(one) == [
        (
            "0/0",
            "k == 1                                                   # return x * k  # e/alice/bench/scenarios.py:83 in f",
        )
    ]
    many = "[\n\"0/2: tensor 'x' dtype mismatch. expected Double, actual Float\",\n\"0/1: tensor 'x' rank mismatch. expected 1, actual 2\"\n]"
    assert [cid for cid, _ in split_recompile_reasons(many)] == ["0/2", "0/1"]
    plain = '0/1: a == 1\nUser stack trace:\n  File "f.py", line 3, in f\n0/0: b == 2'
    assert split_recompile_reasons(plain) == [("0/1", "a == 1"), ("0/0", "b == 2")]
    assert split_recompile_reasons("L['t'] == 0") == [(None, "L['t'] == 0")]
    assert split_recompile_reasons("  ") == []
    assert split_recompile_reasons("0/0: ") == [("0/0", "")]
    assert split_recompile_reasons('{"a": 1}') == [(None, '{"a": 1}')]


def test_split_every_trace_artifact() -> None:
    n = 0
    for _, env, payload in trace_records():
        art = env.get("artifact")
        if not (isinstance(art, dict) and art.get("name") == "recompile_reasons"):
            continue
        reasons = split_recompile_reasons(payload)
        # one reason: the raw text (not JSON-quoted, despite "encoding": "json"); several: a list
        expected = len(json.loads(payload)) if payload.startswith("[") else 1
        assert len(reasons) == expected
        for cid, text in reasons:
            assert cid is not None and re.fullmatch(r"\d+/\d+", cid)
            assert text and "User stack trace" not in text
            assert int(cid.split("/")[1]) < env["frame_compile_id"]
        n += 1
    assert n >= 40


def test_parse_recompiles_message_plain_and_verbose() -> None:
    body = """Recompiling function scale in /home/alice/bench/workload.py:41
    triggered by the following guard failure(s):
    - 5/0: k == 2                                                   # return x * k + 1  # research_torchlogs/workload.py:42 in scale
    - User stack trace:
    -   File "/home/alice/bench/workload.py", line 42, in scale
    -     return x * k + 1"""
    out = parse_recompiles_message(body)
    assert out["co_name"] == "scale" and out["co_firstlineno"] == 41
    assert out["co_filename"] == "/home/alice/bench/workload.py"
    assert out["reasons"] == [
        (
            "5/0",
            "k == 2                                                   # return x * k + 1  # research_torchlogs/workload.py:42 in scale",
        )
    ]
    verbose = """Recompiling function act in /home/alice/bench/workload.py:45
    triggered by the following guard failure(s):
    guard 0 failures:
    - 6/1: tensor 'x' dtype mismatch. expected Double, actual BFloat16

    guard 1 failures:
    - 6/0: tensor 'x' dtype mismatch. expected Float, actual BFloat16"""
    assert [cid for cid, _ in parse_recompiles_message(verbose)["reasons"]] == ["6/1", "6/0"]
    old = """('Recompiling function step in /home/ubuntu/dynamax/dynamax/linear_gaussian_ssm/demos/kf_linreg_jax_vs_pt.py', "triggered by the following guard failure: L['t'] == 0")"""
    out = parse_recompiles_message(old)
    assert (out["co_name"], out["co_firstlineno"], out["reasons"]) == (
        "step",
        None,
        [(None, "L['t'] == 0")],
    )
    no_cid = "Recompiling function forward in /x/llama.py:440\n    triggered by the following guard failure(s):\n    guard 0 failures:\n    - L['attn_metadata'].num_decode_tokens == 0                   \n\n    guard 1 failures:\n    - tensor 'L['input_ids']' size mismatch at index 0. expected 2, actual 4"
    assert [cid for cid, _ in parse_recompiles_message(no_cid)["reasons"]] == [None, None]


def test_parse_recompiles_message_on_fixture_logs() -> None:
    messages = list(torch_logs_messages({"recompiles", "recompiles_verbose"}))
    assert len(messages) >= 20
    for _, body in messages:
        out = parse_recompiles_message(body)
        for _, text in out["reasons"]:
            assert text and "User stack trace" not in text and "\n" not in text
        if body.startswith("Recompiling function"):
            assert out["co_name"] and out["co_filename"] and out["co_firstlineno"]
        if re.search(r"^\s+- ", body, re.M):  # some pastes are cut before the first reason
            assert out["reasons"]


def test_parse_recompile_limit_message() -> None:
    body = """torch._dynamo hit config.cache_size_limit (8)
   function: 'forward' (G:\\ComfyUI_windows_portable\\ComfyUI\\custom_nodes\\ComfyUI-MochiWrapper\\mochi_preview\\dit\\joint_model\\asymm_models_joint.py:320)
   last reason: 1/0: L['packed_indices']['max_seqlen_in_batch_kv'] == 31868
To log all recompilation reasons, use TORCH_LOGS="recompiles"."""
    out = parse_recompile_limit_message(body)
    assert (out["limit_name"], out["limit"], out["co_name"], out["co_firstlineno"]) == (
        "cache_size_limit",
        8,
        "forward",
        320,
    )
    assert out["co_filename"].endswith("asymm_models_joint.py")
    assert out["last_reason"] == ("1/0", "L['packed_indices']['max_seqlen_in_batch_kv'] == 31868")
    assert parse_recompile_limit_message("nothing")["last_reason"] is None


_GUARDISH = st.text(alphabet="L[]'\"()._ =<>!#%*+-/:;,0123456789xsizeGtnorkd\n\t ", max_size=200)


@settings(deadline=None, max_examples=300)
@given(st.one_of(st.text(max_size=300), _GUARDISH))
def test_never_raises(text: str) -> None:
    cause, subject = classify_guard(text)
    assert cause in CAUSES and (subject is None or isinstance(subject, str))
    for cid, reason in split_recompile_reasons(text):
        assert cid is None or isinstance(cid, str)
        assert isinstance(reason, str)
    assert isinstance(parse_recompiles_message(text)["reasons"], list)
    parse_recompile_limit_message(text)

"""Inductor output code: kernels, kinds, fused ops, extern calls and graph on real modules."""

from __future__ import annotations

import collections
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.analysis.fixture_text import fixtures, records, trace_files  # noqa: I001

from pt2logs.analysis.output_code import (
    KINDS,
    Kernel,
    OutputCode,
    fused_ops,
    kernel_kind,
    parse_output_code,
)

_TL_LINE = re.compile(r"^(?P<prefix>.*?\[__output_code\]) ?(?P<msg>.*)$")
# The Triton heuristics decorator in a kernel's source names its category independently of the name.
_DECORATOR = re.compile(
    r"@(?:triton_heuristics\.)?(pointwise|reduction|persistent_reduction|template|foreach|split_scan)\("
)


@lru_cache(maxsize=1)
def fixture_modules() -> tuple[tuple[str, str], ...]:
    """(origin, module text) of every output-code payload in traces and TORCH_LOGS captures."""
    out: list[tuple[str, str]] = []
    for path in trace_files():
        out += [
            (path.name, payload) for env, payload in records(path) if "inductor_output_code" in env
        ]
    for path in sorted(fixtures().glob("torch_logs/*.txt")):
        out += [(f"{path.name} [__output_code]", body) for body in _messages(path)]
    return tuple(out)


def _messages(path: Path) -> Iterator[str]:
    prev, body = None, []
    for line in [*path.read_text(encoding="utf-8", errors="replace").split("\n"), ""]:
        m = _TL_LINE.match(line)
        key = m["prefix"] if m else None
        if key != prev and body and body[0].startswith("Output code:"):
            yield "\n".join(body)
        if key != prev:
            body = []
        if key is not None:
            body.append(m["msg"])
        prev = key


def test_every_fixture_module() -> None:
    modules = fixture_modules()
    assert len(modules) >= 100
    assert any("[__output_code]" in origin for origin, _ in modules)
    backends: collections.Counter[str] = collections.Counter()
    for origin, text in modules:
        oc = parse_output_code(text)
        lines = text.splitlines()
        simple = [ln.split(" = ")[0] for ln in lines if re.match(r"\w+ = async_compile\.\w+\(", ln)]
        assert [k.kernel_name for k in oc.kernels] == simple, origin
        assert all(k.kind in KINDS for k in oc.kernels)
        assert oc.graph in {"forward", "backward", "inference"}, origin
        code = [ln for ln in lines if not ln.lstrip().startswith("#")]  # provenance comments
        calls = sum(ln.count("extern_kernels.") for ln in code if "import" not in ln)
        assert sum(oc.extern_calls.values()) == calls, origin
        backends.update(k.backend for k in oc.kernels)
    assert set(backends) == {"triton", "cpp"}


def test_kind_agrees_with_triton_decorator() -> None:
    checked = 0
    for _, text in fixture_modules():
        blocks = re.split(r"(?m)^(?=\w+ = async_compile\.\w+\()", text)[1:]
        for block, kernel in zip(blocks, parse_output_code(text).kernels, strict=True):
            decorator = _DECORATOR.search(block)
            if kernel.backend == "triton":
                assert decorator and decorator.group(1) == kernel.kind, kernel.kernel_name
                checked += 1
            else:
                assert kernel.kind == "other"
    assert checked >= 100


def test_graph_and_extern_calls_on_a_cpu_module() -> None:
    text = next(t for origin, t in fixture_modules() if "4_backward" in t.split("\n", 2)[1])
    oc = parse_output_code(text)
    assert oc.graph == "backward"
    assert [k.kernel_name for k in oc.kernels] == ["cpp_fused__log_softmax_backward_data_0"]
    assert oc.kernels[0] == Kernel(
        "cpp_fused__log_softmax_backward_data_0", "cpp", "other", ("_log_softmax_backward_data",)
    )


@pytest.mark.parametrize(
    ("line", "kernel"),
    [  # real definition lines: fixtures (torch 2.11 GPU, 2.13 CPU, tlparse) and public generated code
        ("triton_poi_fused_addmm_relu_sigmoid_threshold_backward_0 = async_compile.triton('triton_poi_fused_addmm_relu_sigmoid_threshold_backward_0', '''", ("triton", "pointwise", ("addmm", "relu", "sigmoid", "threshold_backward"))),
        ("triton_red_fused_native_layer_norm_native_layer_norm_backward_2 = async_compile.triton('triton_red_fused_native_layer_norm_native_layer_norm_backward_2', '''", ("triton", "reduction", ("native_layer_norm", "native_layer_norm_backward"))),
        ("triton_per_fused_all_reduce_gelu_native_layer_norm_0 = async_compile.triton('triton_per_fused_all_reduce_gelu_native_layer_norm_0', '''", ("triton", "persistent_reduction", ("all_reduce", "gelu", "native_layer_norm"))),
        ("triton_tem_fused_0 = async_compile.triton('triton_tem_fused_0', '''", ("triton", "template", ())),
        ("triton_for_fused_0 = async_compile.triton('triton_', '''", ("triton", "foreach", ())),
        ("cpp_fused__log_softmax_0 = async_compile.cpp_pybinding(['float*', 'const float*', 'float*', 'float*'], r'''", ("cpp", "other", ("_log_softmax",))),
        ("cpp_fused_relu_threshold_backward_0 = async_compile.cpp_pybinding(['float*', 'bool*'], r'''", ("cpp", "other", ("relu", "threshold_backward"))),
        ("multi_kernel_0 = async_compile.multi_kernel('multi_kernel_0', [", ("multi_kernel", "reduction", ())),
    ],
)  # fmt: skip
def test_kernel_line(line: str, kernel: tuple[str, str, tuple[str, ...]]) -> None:
    (k,) = parse_output_code(line + "\n").kernels
    assert (k.backend, k.kind, k.fused_ops) == kernel
    assert k.kernel_name == line.split(" = ")[0]


@pytest.mark.parametrize(
    ("name", "kind", "ops"),
    [
        ("triton_red_fused_abs_add_div_eq_isnan_logical_and_logical_or_mul_sgn_sum_0", "reduction", ("abs", "add", "div", "eq", "isnan", "logical_and", "logical_or", "mul", "sgn", "sum")),
        ("triton_poi_fused_add_native_layer_norm_0", "pointwise", ("add", "native_layer_norm")),
        ("triton_poi_fused__to_copy_add_3", "pointwise", ("_to_copy", "add")),
        ("triton_poi_fused__unknown_op_1", "pointwise", ("_unknown", "op")),
        ("model_triton_spl_fused_cumsum_0", "split_scan", ("cumsum",)),
        ("triton_poi__0", "pointwise", ()),
        ("halide_kernel_0", "other", ()),
    ],
)  # fmt: skip
def test_names(name: str, kind: str, ops: tuple[str, ...]) -> None:
    assert (kernel_kind(name), fused_ops(name)) == (kind, ops)


def test_extern_calls_skip_kernel_sources_and_imports() -> None:
    text = """# AOT ID: ['0_forward']
from torch._inductor.select_algorithm import extern_kernels
triton_tem_fused_0 = async_compile.triton('triton_tem_fused_0', '''
# extern_kernels.mm(a, b) mentioned in a kernel source is not a call site
''')
def partition_0(args):
    extern_kernels.mm(buf0, arg1_1, out=buf1)
def call(args):
    extern_kernels.addmm(arg2_1, buf1, arg3_1, alpha=1, beta=1, out=buf2)
    extern_kernels.mm(buf2, arg4_1, out=buf3)
"""
    oc = parse_output_code(text)
    assert oc.extern_calls == {"mm": 2, "addmm": 1}
    assert oc.graph == "forward" and len(oc.kernels) == 1
    assert parse_output_code("# AOT ID: ['12_inference']\r\nimport torch\r\n").graph == "inference"
    assert parse_output_code("") == OutputCode()


@settings(deadline=None, max_examples=300)
@given(st.text(alphabet="x_ =.()'\n#[]async_compiletrionfused_poi0123456789AOTID:", max_size=300))
def test_never_raises(text: str) -> None:
    oc = parse_output_code(text)
    assert all(k.kind in KINDS for k in oc.kernels)
    assert all(n > 0 for n in oc.extern_calls.values())


#: the kernel-source pattern as first written (lazy, backtracking): _SOURCE must cut exactly what it cuts
_LAZY_SOURCE = re.compile(r"'''.*?'''|\"\"\".*?\"\"\"", re.S)


@settings(deadline=None, max_examples=500)
@given(st.text(alphabet="'\"ab\n", max_size=40))
def test_source_strings_cut_as_the_lazy_pattern_cuts(text: str) -> None:
    from pt2logs.analysis.output_code import _SOURCE

    assert _SOURCE.sub("''", text) == _LAZY_SOURCE.sub("''", text)


@settings(deadline=None, max_examples=300)
@given(st.text(alphabet="extern_kernels.mm()'\"\n x", max_size=120))
def test_extern_calls_as_the_lazy_pattern_counts(text: str) -> None:
    want: dict[str, int] = {}
    for m in re.finditer(r"\bextern_kernels\.(?P<op>\w+)\(", _LAZY_SOURCE.sub("''", text)):
        want[m.group("op")] = want.get(m.group("op"), 0) + 1
    assert parse_output_code(text).extern_calls == want


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "a = async_compile.triton(",
                "x_1 = async_compile.cpp_pybinding(",
                " = async_compile.t(",
                "é = async_compile.x(",
                "a b = async_compile.c(",
                "k = async_compile.(",
                "\n",
                "\r\n",
                "a",
                " ",
                "'''",
                "= async_compile.y(",
                "q = async_compile.z( = async_compile.w(",
            ]
        ),
        max_size=25,
    ).map("".join)
)
def test_kernel_lines_are_the_patterns_matches(text: str) -> None:
    from pt2logs.analysis.output_code import _KERNEL, kernel_lines

    assert [m.span() for m in kernel_lines(text)] == [m.span() for m in _KERNEL.finditer(text)]

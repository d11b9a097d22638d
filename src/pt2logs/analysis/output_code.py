"""Inductor output code: the ``inductor_output_code`` artifact / TORCH_LOGS ``[__output_code]``.

The payload is the generated Python module (torch 2.1+; TORCH_LOGS prefixes it with ``Output
code:``). What we read from it:

* Graph: the first line ``# AOT ID: ['0_forward']`` (``_backward`` / ``_inference``; torch 2.4+).
  Older modules have no such line: ``graph`` is None.
* Kernels: ``^<name> = async_compile.<backend>(`` at column 0. Backends: ``triton``,
  ``cpp_pybinding`` (2.1+) and ``cpp`` (older) both normalised to ``cpp``, ``halide``, ``cuda`` /
  ``rocm`` (CUTLASS / CK templates), ``multi_kernel``, anything else kept as written.
* Kind, from the name: inductor names Triton kernels ``triton_<first 3 letters of the heuristics
  category>_<fused name>_<n>`` (optionally prefixed by an AOTI model name): ``poi`` pointwise,
  ``red`` reduction, ``per`` persistent_reduction, ``tem`` template, ``for`` foreach, ``spl``
  split_scan, ``unk`` other; ``foreach`` anywhere in a name is foreach. Backends ``cuda`` / ``rocm``
  are templates; ``multi_kernel`` (persistent vs looped reduction picked at run time) is a
  reduction. CPU ``cpp_fused_*`` names say nothing about the loop shape, so cpp kernels are
  ``other`` (documented choice: we do not read the C++ source). Anything else is ``other``.
* Fused ops: the part between ``fused_`` and the trailing ``_<n>``, split on ``_`` and re-joined
  greedily into the longest known multi-word aten op name (``MULTI_WORD_OPS``, built from the
  fixtures plus common aten ops): ``add_native_layer_norm`` -> ``add``, ``native_layer_norm``;
  ``_log_softmax_backward_data`` stays one op. Unknown multi-word ops come out split.
* Extern calls: ``extern_kernels.<op>(`` call sites counted per op, outside the triple-quoted
  kernel sources. All of the module is counted, not only ``call``: with graph partitions
  (cudagraphs) the calls sit in ``partition_<i>`` functions. The import line has no ``(``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

KINDS = frozenset(
    {"pointwise", "reduction", "persistent_reduction", "template", "foreach", "split_scan", "other"}
)

_OPS = """
    _adaptive_avg_pool2d _adaptive_avg_pool2d_backward _log_softmax _log_softmax_backward_data
    _low_memory_max_pool2d_with_indices _native_batch_norm_legit
    _native_batch_norm_legit_functional _native_batch_norm_legit_no_training
    _scaled_dot_product_efficient_attention _scaled_dot_product_flash_attention _softmax
    _softmax_backward_data _to_copy _unsafe_index _unsafe_index_put _unsafe_view
    adaptive_avg_pool2d all_gather_into_tensor all_reduce all_to_all_single as_strided
    as_strided_scatter avg_pool2d avg_pool2d_backward bitwise_and bitwise_not bitwise_or
    bitwise_xor clamp_max clamp_min constant_pad_nd convolution_backward elu_backward
    embedding_dense_backward empty_like full_like gelu_backward hardsigmoid_backward
    hardswish_backward hardtanh_backward index_put index_select leaky_relu leaky_relu_backward
    lift_fresh log_softmax logical_and logical_not logical_or logical_xor masked_fill
    max_pool2d_with_indices max_pool2d_with_indices_backward mse_loss native_batch_norm
    native_batch_norm_backward native_dropout native_dropout_backward native_group_norm
    native_group_norm_backward native_layer_norm native_layer_norm_backward new_empty new_ones
    new_zeros nll_loss_backward nll_loss_forward ones_like rand_like randn_like
    reduce_scatter_tensor reflection_pad2d scatter_add scatter_reduce select_backward
    select_scatter sigmoid_backward silu_backward slice_backward slice_scatter softplus_backward
    split_with_sizes tanh_backward threshold_backward upsample_bilinear2d upsample_nearest2d
    var_mean view_as_complex view_as_real wait_tensor zeros_like
"""
MULTI_WORD_OPS = frozenset(_OPS.split())  # aten ops with "_" in the name (fixtures + common)
_MAX_OP_WORDS = max(op.strip("_").count("_") + 2 for op in MULTI_WORD_OPS)

_AOT_ID = re.compile(r"^# AOT ID: \['?\d*_?(?P<graph>forward|backward|inference)'?\]", re.M)
_KERNEL = re.compile(r"^(?P<name>\w+) = async_compile\.(?P<backend>\w+)\(", re.M)
_EXTERN = re.compile(r"\bextern_kernels\.(?P<op>\w+)\(")
#: a triple-quoted string (kernel source): the lazy '''.*?'''|""".*?""" (re.S) unrolled, which is linear
_SOURCE = re.compile(r"'''[^']*(?:'(?!'')[^']*)*'''|\"\"\"[^\"]*(?:\"(?!\"\")[^\"]*)*\"\"\"")
_FUSED = re.compile(r"(?:^|_)fused_(?P<ops>\w+)$")
_INDEX = re.compile(r"_\d+$")
_TRITON_KIND = {
    "poi": "pointwise",
    "red": "reduction",
    "per": "persistent_reduction",
    "tem": "template",
    "for": "foreach",
    "spl": "split_scan",
    "unk": "other",
}
_TRITON_PREFIX = re.compile(r"(?:^|_)triton_(poi|red|per|tem|for|spl|unk)_")
_BACKENDS = {"cpp_pybinding": "cpp", "cpp": "cpp", "triton": "triton"}


class Kernel(NamedTuple):
    """One ``<name> = async_compile.<backend>(...)`` definition (a tuple, fields by name too)."""

    kernel_name: str
    backend: str
    kind: str
    fused_ops: tuple[str, ...]


@dataclass
class OutputCode:
    """What one output-code module says: kernels, extern call counts, AOT graph kind."""

    kernels: list[Kernel] = field(default_factory=list)
    extern_calls: dict[str, int] = field(default_factory=dict)
    graph: str | None = None


def parse_output_code(text: str) -> OutputCode:
    """Parse one generated module (or TORCH_LOGS ``Output code:`` message body). Never raises."""
    aot = _AOT_ID.search(text)
    kernels = [_kernel(m.group("name"), m.group("backend")) for m in kernel_lines(text)]
    extern: dict[str, int] = {}
    # without "extern_kernels." nothing can match (cutting strings out only removes text, and the "''"
    # left in their place cannot be part of a match)
    for m in _EXTERN.finditer(_SOURCE.sub("''", text)) if "extern_kernels." in text else ():
        extern[m.group("op")] = extern.get(m.group("op"), 0) + 1
    return OutputCode(
        kernels=kernels, extern_calls=extern, graph=aot.group("graph") if aot else None
    )


def kernel_lines(text: str) -> list[re.Match[str]]:
    """What ``_KERNEL.finditer(text)`` finds, trying the pattern only on the lines that hold
    `` = async_compile.`` (a module has a few; the pattern tried at every line start cost 40 % of a parse).
    ``\\w+`` holds no space, so a line can only match at its first `` = async_compile.``."""
    out = []
    i = text.find(_DEF)
    while i >= 0:
        m = _KERNEL.match(text, text.rfind("\n", 0, i) + 1)
        if m is not None:
            out.append(m)
        end = text.find("\n", i)
        if end < 0:
            break
        i = text.find(_DEF, end)
    return out


_DEF = " = async_compile."


def kernel_kind(name: str, backend: str = "triton") -> str:
    """``triton_red_fused_sum_0`` -> ``reduction``; see the module docstring for the rules."""
    if backend in ("cuda", "rocm"):
        return "template"
    if backend == "multi_kernel":
        return "reduction"
    prefix = _TRITON_PREFIX.search(name)
    if prefix:
        return _TRITON_KIND[prefix.group(1)]
    if "foreach" in name:
        return "foreach"
    return "other"


def fused_ops(name: str) -> tuple[str, ...]:
    """``triton_poi_fused_add_native_layer_norm_0`` -> ``('add', 'native_layer_norm')``."""
    m = _FUSED.search(_INDEX.sub("", name))
    if not m:
        return ()
    words = m.group("ops").split("_")
    ops: list[str] = []
    i = 0
    while i < len(words):
        for j in range(min(len(words), i + _MAX_OP_WORDS), i + 1, -1):
            candidate = "_".join(words[i:j])
            if candidate in MULTI_WORD_OPS:
                ops.append(candidate)
                i = j
                break
        else:
            if words[i] == "" and i + 1 < len(words):  # unknown op with a leading underscore
                ops.append("_" + words[i + 1])
                i += 2
            else:
                if words[i]:
                    ops.append(words[i])
                i += 1
    return tuple(ops)


def _kernel(name: str, backend: str) -> Kernel:
    return Kernel(
        name, _BACKENDS.get(backend, backend), kernel_kind(name, backend), fused_ops(name)
    )

"""Recompile reasons: split them into single guard failures and name their cause.

Sources: TORCH_TRACE ``recompile_reasons`` (torch >= 2.5; despite ``"encoding": "json"`` one
reason is written as raw text and several as a JSON list; a JSON string is accepted too),
``compilation_metrics.recompile_reason`` (newest only), TORCH_LOGS ``[__recompiles]`` /
``[__recompiles_verbose]`` bodies and the recompile-limit warning.

A reason is ``<old compile id>: <guard>`` (id prefix since torch 2.5), newest first, maybe followed
by ``User stack trace:`` lines (2.11+). ``L['x']`` prints as ``x`` since 2.6. Python guards are
padded to 60 columns and followed by ``# <source line>  # <file:line in fn>`` (2.1+). Verbose mode
joins several failures with ``"; "``: the first one is classified.

Guard shapes the rules are written for (grammar, not sample strings):

* C++ TensorCheck (2.0+): ``tensor '<source>' <dispatch key set | dtype | Tensor device index |
  requires_grad | rank | size | stride(s)> mismatch...``. A dispatch key set change whose backend
  keys differ (``CPU`` vs ``Meta``/``CUDA``) is a device move, else (``ADInplaceOrView`` from
  inference mode, functorch keys) dispatch/grad mode. Legacy ``___check_tensors(...)`` without
  detail counts as ``shape_mismatch``.
* Global state: ``GLOBAL_STATE changed: <components>`` (2.5+; grad/autocast/inference components
  are dispatch/grad mode, others global/config), ``___check_global_state()`` (2.2-2.4, component
  unknown: counted as grad mode, its usual cause), ``___is_grad_enabled()`` (<= 2.1).
* Python guards: ``___check_type_id``, ``___check_obj_id``, ``isinstance``, ``hasattr``,
  ``___dict_contains``, ``x is y`` (aliasing), ``src == <literal>``, ``src is None``, ``len(src) ==
  n``; on a global ``G['name']`` any of these is ``global_or_config_changed``, as are
  ``___check_torch_function_mode_stack()``, ``BACKEND_MATCH failure`` and the default device.
* Shape env: ``2 <= x.size()[0] <= 16``, ``(12 % n) == 0``, ``Eq(L['x'].size()[0], 5)`` (2023),
  ``Ne(s0, 1)`` / ``s0 <= 64`` (bare symbols).
* Messages: ``Duplicate tensors found``, ``Cache line invalidated because X got deallocated``,
  ``getattr failed on source X``, ``KeyError on X``, ``expected type of 'x' to be a tensor type``.
"""

from __future__ import annotations

import json
import re
from typing import Any

CAUSES: dict[str, str] = {
    "shape_mismatch": "a tensor's size, stride or storage offset changed",
    "ndim_mismatch": "a tensor's number of dimensions (rank) changed",
    "dtype_mismatch": "a tensor's dtype changed",
    "device_mismatch": "a tensor is on another device type or device index",
    "requires_grad_mismatch": "a tensor's requires_grad flag changed",
    "python_value_changed": "a specialised Python value (int/float/bool/str/None/tuple/len) changed",
    "type_or_id_changed": "an object's type, identity, attributes/keys or input aliasing changed",
    "dispatch_key_or_grad_mode": "grad/inference mode, autocast, functorch or dispatch keys changed",
    "global_or_config_changed": "a global, torch function mode, global state, config or backend",
    "dynamic_shape_guard": "a symbolic (dynamic shape) guard on sizes or symbolic ints failed",
    "recompile_limit_hit": "the recompile (cache size) limit was reached",
    "other": "none of the above: unknown reason, guard evaluation error, empty text",
}

#: one real failed-guard text per cause (from the fixtures and public issue threads), for the docs
EXAMPLES: dict[str, str] = {
    "shape_mismatch": "tensor 'x' size mismatch at index 0. expected 8, actual 16",
    "ndim_mismatch": "tensor 'x' rank mismatch. expected 1, actual 2",
    "dtype_mismatch": "tensor 'x' dtype mismatch. expected Float, actual Double",
    "device_mismatch": "tensor 'x' dispatch key set mismatch. expected DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, AutogradCPU), actual DispatchKeySet(Meta, BackendSelect, ADInplaceOrView, AutogradMeta)",
    "requires_grad_mismatch": "tensor 'x' requires_grad mismatch. expected requires_grad=0",
    "python_value_changed": "L['self']._modules['self_attn'].layer_idx == 0",
    "type_or_id_changed": "___check_type_id(L['self']._modules['mixer'], 157671424)",
    "dispatch_key_or_grad_mode": "GLOBAL_STATE changed: grad_mode",
    "global_or_config_changed": "___check_torch_function_mode_stack()",
    "dynamic_shape_guard": "2 <= x.size()[0] <= 16",
    "recompile_limit_hit": "torch._dynamo hit config.recompile_limit (4)",
    "other": "name 'Trunc' is not defined",
}  # fmt: skip

_CID = r"(?:!\d+/)?\d+/\d+(?:_\d+)?"
_SRC = r"[A-Za-z_]\w*(?:\.\w+|\[[^\[\]]*\]|\((?:[^()]|\([^()]*\))*\))*"  # name + trailers
_REASON_HEAD = re.compile(rf"\s*(?:-\s+)?(?P<cid>{_CID}):[ \t]?(?P<rest>.*)\Z", re.S)
_LINE_CID = re.compile(rf"^[ \t]*(?:-[ \t]+)?{_CID}:", re.M)
_STACK = re.compile(r"\n[ \t]*(?:-[ \t]*)?User stack trace:")
_LIST_WRAP = re.compile(r"\[\s*\[?\s*(['\"])(.*)\1\s*\]?\s*\]", re.S)  # 2022: ['guard']
_COMMENT = re.compile(r"\s#(?:\s|$)")
_RECOMPILING = re.compile(r"Recompiling function (\S+) in (.+):(\d+)\s*$", re.M)
_RECOMPILING_2023 = re.compile(  # torch 2.0-2.1 logged a tuple on one line
    r"Recompiling function (\S+) in ([^'\"]+)['\"],\s*['\"]triggered by the following guard "
    r"failures?:\s*(.*?)['\"]?\)?\s*$", re.M)  # fmt: skip
_LIMIT_HEAD = re.compile(r"hit config\.(\w+) \((\d+)\)")
_LIMIT_FUNC = re.compile(r"function: '([^']*)' \((.+):(\d+)\)")
_LIMIT_REASON = re.compile(r"^\s*(?:last reason|reasons):\s*(.*)$", re.M)
_LIMIT = re.compile(r"hit config\.\w*limit|recompil\w* (?:cache )?limit|cache_size_limit", re.I)
_LIMIT_NAME = re.compile(r"\w*(?:recompile|cache_size)_limit")
_TENSOR = re.compile(
    r"^tensor '(?P<src>.+?)' (?P<prop>dispatch key set|dtype|Tensor device index|device index|"
    r"device|requires_grad|rank|ndim|sizes?|strides?|storage.offset)\b")  # fmt: skip
_CHECK_TENSORS = re.compile(r"^(?:not\s+)?___check_tensors(?:_verbose)?\(([^,)]*)")
_KEYSET = re.compile(r"DispatchKeySet\(([^)]*)\)")
_NON_BACKEND_KEY = re.compile(
    r"^(?:BackendSelect|ADInplaceOrView|Python\w*|Functionalize|Conjugate|Negative|ZeroTensor|"
    r"FuncTorch\w*|Autograd\w*|Autocast\w*|Batched\w*|Named|Tracer|PreDispatch|VmapMode|Fake\w*|"
    r"Undefined|Dense|Sparse|SparseCsr|Quantized|NestedTensor)$")  # fmt: skip
_BACKEND_PREFIX = re.compile(r"^(?:SparseCsr|Sparse|Quantized|NestedTensor)(?=[A-Z])")
_GLOBAL_STATE = re.compile(r"^GLOBAL_STATE changed:\s*(.*)$")
_GRAD_LIKE = re.compile(r"grad|autocast|inference", re.I)
_GRAD_FUNCS = re.compile(  # the group name is the subject
    r"(?P<grad_mode>___is_grad_enabled)|(?P<global_state>___check_global_state)"
    r"|(?P<inference_mode>___is_inference_mode)|(?P<autocast>___is_autocast)"
    r"|(?P<functorch>compare_functorch_state|___check_functorch)"
    r"|(?P<forward_ad>forward_ad\._current_level)")  # fmt: skip
_CONFIG_FUNCS = re.compile(
    r"(?P<backend>BACKEND_MATCH|___check_current_backend)|(?P<config>config_hash)"
    r"|(?P<torch_function_mode>torch_function_mode)"
    r"|(?P<torch_function>___is_torch_function_enabled)"
    r"|(?P<deterministic_algorithms>deterministic_algorithms)|(?P<default_device>CURRENT_DEVICE)")  # fmt: skip
_MESSAGE = re.compile(
    r"^(?:Duplicate tensors found:\s*\[?\s*['\"]?([^'\",\]]*)"
    r"|check_overlapping\(overlapping=\[([^,\]]*)"
    r"|Cache line invalidated because (.+?) got deallocated"
    r"|getattr failed on source (.+)$|KeyError on (.+)$"
    r"|expected type of '(.+?)' to be a tensor type)")  # fmt: skip
_TYPE_ID = re.compile(
    rf"^(?:not\s+)?(?:(?:___check_type_id|___check_obj_id|___check_fake_script_type|isinstance|"
    rf"issubclass|hasattr|___dict_version|___dataclass_fields|___namedtuple_fields|type|id|set\."
    rf"__contains__|list|set|tuple)\((?:dict\.keys\()?|___dict_contains\([^,]+,)\s*(?P<src>{_SRC})")  # fmt: skip
_ALIAS = re.compile(rf"^(?P<src>{_SRC})\s+is\s+(?P<other>{_SRC})$")
_SHAPE_STRONG = re.compile(
    r"\.(?:size|stride)\(\)\[|\.storage_offset\(\)|\b(?:Eq|Ne|Lt|Le|Gt|Ge|Mod|PythonMod|FloorDiv|"
    r"CeilDiv|CleanDiv|IntTrueDiv|FloatTrueDiv|TruncToInt|CeilToInt|FloorToInt|RoundToInt|Max|Min|"
    r"Abs|Piecewise|ToFloat|IsNonOverlappingAndDenseIndicator|OpaqueUnaryFn_\w+)\(")  # fmt: skip
_SHAPE_WEAK = re.compile(r"<=?|>=?|%|//|\*|\+|\s-\s|\b[su]\d+\b")
_SHAPE_SRC = re.compile(rf"({_SRC})\.(?:size|stride|storage_offset)\(\)")
_SYMBOL = re.compile(r"\b[suqzc]\d+\b")
_ANY_SRC = re.compile(rf"(?!(?:Eq|Ne|Lt|Le|Gt|Ge|Mod|Max|Min|Abs|True|False|None)\b){_SRC}")
_VALUE = re.compile(
    rf"^(?:not\s+)?(?P<src>{_SRC})(?:(?:\s*(?:==|!=)\s*|\s+is\s+(?:not\s+)?)(?P<val>.+))?$")  # fmt: skip
_NAN = re.compile(rf"(?:__math_isnan|__numpy_isnan)\((?P<src>{_SRC})\)")
_WRAPPER = re.compile(
    r"^(?:len|___tuple_iterator_len|___normalize_range_iter|___normalize_count_iter|float|int|str|"
    r"bool|complex|___as_tensor)\(([^()]*(?:\([^()]*\)[^()]*)*)\)")  # fmt: skip
_NOT_LITERAL = re.compile(r"^(?:[LG]\[|(?!(?:True|False|None|inf|nan|Ellipsis)$)[A-Za-z_]\w*$)")
_ODICT = re.compile(r"___odict_getitem\(\s*([^,()]+),\s*(['\"])(.*?)\2\s*\)")
_SCOPE = re.compile(r"(?<![\w\]])[LG]\[\s*(['\"])(.*?)\1\s*\]")
_MODATTR = re.compile(r"\.(?:_modules|_parameters|_buffers|__dict__)\[\s*(['\"])(\w+)\1\s*\]")


def split_recompile_reasons(payload: str) -> list[tuple[str | None, str]]:
    """``recompile_reasons`` payload -> [(prev_compile_id or None, guard text)], order kept."""
    return [_split_one(item) for item in _payload_items(payload) if item.strip()]


def parse_recompiles_message(text: str) -> dict[str, Any]:
    """Body of a TORCH_LOGS ``[__recompiles]`` / ``[__recompiles_verbose]`` message.

    Returns ``co_name``, ``co_filename``, ``co_firstlineno`` (None when absent) and ``reasons``
    as ``[(prev_compile_id or None, guard text)]``. Every reason line starts with ``- ``
    (``User stack trace:`` lines too); ``guard N failures:`` lines separate verbose blocks.
    """
    out: dict[str, Any] = dict.fromkeys(("co_name", "co_filename", "co_firstlineno"))
    old = _RECOMPILING_2023.search(text)
    head = old or _RECOMPILING.search(text)
    if head:
        out["co_name"], out["co_filename"] = head.group(1), head.group(2).strip()
        out["co_firstlineno"] = None if old else int(head.group(3))
    if old:
        out["reasons"] = [_split_one(old.group(3))] if old.group(3).strip() else []
        return out
    items: list[str] = []
    in_stack = False
    # a pasted fragment may start at the reason lines, without "triggered by the following ..."
    started = "triggered by the following guard failure" not in text
    for line in text.split("\n"):
        s = line.strip()
        if not started:
            started = s.startswith("triggered by the following guard failure")
        elif s.startswith("-"):
            item, raw = s[1:].strip(), line.split("-", 1)[1][1:].rstrip()  # raw keeps indent
            if _LINE_CID.match(item):
                items.append(item)
                in_stack = False
            elif items and item == "User stack trace:":
                items[-1] += "\nUser stack trace:"
                in_stack = True
            elif items and in_stack and raw[:1].isspace():
                items[-1] += "\n" + raw
            elif item:
                items.append(item)  # a reason without compile id (torch < 2.5)
                in_stack = False
    out["reasons"] = [_split_one(i) for i in items]
    return out


def parse_recompile_limit_message(text: str) -> dict[str, Any]:
    """``torch._dynamo hit config.recompile_limit (8)`` warning (``cache_size_limit`` <= 2.5)."""
    head, func = _LIMIT_HEAD.search(text), _LIMIT_FUNC.search(text)
    reason = _LIMIT_REASON.search(text)
    return {
        "limit_name": head.group(1) if head else None,
        "limit": int(head.group(2)) if head else None,
        "co_name": func.group(1) if func else None,
        "co_filename": func.group(2) if func else None,
        "co_firstlineno": int(func.group(3)) if func else None,
        "last_reason": _split_one(reason.group(1)) if reason else None,
    }


def classify_guard(text: str) -> tuple[str, str | None]:
    """A failed-guard text (with or without ``cid:`` prefix) -> (cause, guard_subject)."""
    full, code = _normalise(text)
    if not code:
        return "other", None
    if _LIMIT.search(full):
        name = _LIMIT_NAME.search(full)
        return "recompile_limit_hit", name.group(0) if name else None
    if m := _TENSOR.match(code):
        return _tensor_cause(m.group("prop"), code), _humanize(m.group("src"))
    if m := _CHECK_TENSORS.match(code):
        return "shape_mismatch", _humanize(m.group(1))
    if m := _GLOBAL_STATE.match(code):
        what = m.group(1).strip()
        grad = _GRAD_LIKE.search(what)
        return ("dispatch_key_or_grad_mode" if grad else "global_or_config_changed"), what or None
    if m := _GRAD_FUNCS.search(code):
        return "dispatch_key_or_grad_mode", m.lastgroup
    if m := _CONFIG_FUNCS.search(code):
        return "global_or_config_changed", m.lastgroup
    if m := _MESSAGE.match(code):
        return "type_or_id_changed", _humanize(next(g for g in m.groups() if g is not None))
    if _SHAPE_STRONG.search(code) or "unknown var " in full.split("\n", 1)[0]:
        return "dynamic_shape_guard", _shape_subject(code)
    alias = _ALIAS.match(code)
    if m := (alias if alias and _NOT_LITERAL.match(alias.group("other")) else _TYPE_ID.match(code)):
        return _global_or("type_or_id_changed", m.group("src"))
    if m := _NAN.search(code):
        return _global_or("python_value_changed", m.group("src"))
    m = _VALUE.match(code)
    if m and (m.group("val") is None or not _NOT_LITERAL.match(m.group("val").strip())):
        return _global_or("python_value_changed", m.group("src"))
    if _SHAPE_WEAK.search(code):
        return "dynamic_shape_guard", _shape_subject(code)
    return "other", None


def _payload_items(payload: str) -> list[str]:
    text = payload.strip()
    if not text:
        return []
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v if isinstance(v, str) else json.dumps(v) for v in value]
    starts = [m.start() for m in _LINE_CID.finditer(text)]
    bounds = [0, *starts[1:]] if starts and starts[0] > 0 else starts or [0]
    return [text[a:b] for a, b in zip(bounds, [*bounds[1:], len(text)], strict=True)]


def _split_one(reason: str) -> tuple[str | None, str]:
    body = _STACK.split(reason, maxsplit=1)[0]
    m = _REASON_HEAD.match(body)
    return (m.group("cid"), m.group("rest").strip()) if m else (None, body.strip())


def _normalise(text: str) -> tuple[str, str]:
    t = text.strip()
    wrapped = _LIST_WRAP.fullmatch(t)
    t = wrapped.group(2) if wrapped else t
    _, body = _split_one(t[2:] if t.startswith("- ") else t)
    first = body.split("\n", 1)[0]
    comment = _COMMENT.search(first)
    return body, first[: comment.start() if comment else None].split("; ", 1)[0].strip()


def _tensor_cause(prop: str, code: str) -> str:
    if prop == "dispatch key set":
        sets = [_backends(k) for k in _KEYSET.findall(code)]
        moved = len(sets) == 2 and all(sets) and sets[0] != sets[1]
        return "device_mismatch" if moved else "dispatch_key_or_grad_mode"
    if "device" in prop:
        return "device_mismatch"
    if prop in ("rank", "ndim"):
        return "ndim_mismatch"
    return f"{prop}_mismatch" if prop in ("dtype", "requires_grad") else "shape_mismatch"


def _backends(keyset: str) -> frozenset[str]:
    keys = (k.strip() for k in keyset.split(","))
    return frozenset(
        _BACKEND_PREFIX.sub("", k) for k in keys if k and not _NON_BACKEND_KEY.match(k)
    )


def _global_or(cause: str, src: str) -> tuple[str, str | None]:
    return ("global_or_config_changed" if src.startswith("G[") else cause), _humanize(src)


def _shape_subject(code: str) -> str | None:
    m = _SHAPE_SRC.search(code) or _SYMBOL.search(code) or _ANY_SRC.search(code)
    return _humanize(m.group(1) if m and m.re is _SHAPE_SRC else m.group(0)) if m else None


def _humanize(src: str) -> str | None:
    """``L['self']._modules['l1']._parameters['weight']`` -> ``self.l1.weight``."""
    s = src.strip()
    wrapped = _WRAPPER.match(s)
    s = wrapped.group(1).strip() if wrapped else s
    count = 1
    while count:
        s, count = _ODICT.subn(lambda m: f"{m.group(1)}[{m.group(2)}{m.group(3)}{m.group(2)}]", s)
    s = _MODATTR.sub(r".\2", _SCOPE.sub(r"\2", s))
    return s.removesuffix(".__code__").removesuffix(".keys()") or None

"""A failed guard's parts: kind, source expression, expected and actual values.

The cause taxonomy (:mod:`pt2logs.analysis.guards`) says *why* a frame recompiled; this says *which*
guard: its identity is kind + source (``size`` of ``x.size()[1]``), the values it expected and saw go
to their own columns. It reads the same guard grammar, with the same patterns.
"""

from __future__ import annotations

import re

from pt2logs.analysis.guards import (
    _ALIAS,
    _ANY_SRC,
    _CHECK_TENSORS,
    _CONFIG_FUNCS,
    _GLOBAL_STATE,
    _GRAD_FUNCS,
    _LIMIT,
    _LIMIT_HEAD,
    _LIMIT_NAME,
    _MESSAGE,
    _NAN,
    _NOT_LITERAL,
    _SHAPE_STRONG,
    _SHAPE_WEAK,
    _SRC,
    _SYMBOL,
    _TENSOR,
    _TYPE_ID,
    _VALUE,
    _WRAPPER,
    _normalise,
)

_TENSOR_VALUES = re.compile(
    r"(?:at index (?P<i>\d+)\. )?expected:? (?:requires_grad=)?(?P<exp>.+?)"
    r"(?:, actual:? (?P<act>.+?))?\.?(?:\s+Guard failed.*)?$",
    re.I,
)
_TENSOR_KIND = {"dispatch key set": ("dispatch_keys", "{}"), "dtype": ("dtype", "{}.dtype"),
                "requires_grad": ("requires_grad", "{}.requires_grad"), "rank": ("ndim", "{}.dim()"),
                "ndim": ("ndim", "{}.dim()"), "storage offset": ("storage_offset", "{}.storage_offset()"),
                "storage_offset": ("storage_offset", "{}.storage_offset()")}  # fmt: skip
_CALL = re.compile(r"^(?:not\s+)?(?P<fn>[\w.]+)\(")
_TYPE_HINT = re.compile(r",\s*type=(<class '[^']*'>)")
_COMPARE = re.compile(
    rf"^(?P<neg>not\s+)?(?P<src>{_SRC})\s*(?P<op>==|!=|\s+is\s+not\s+|\s+is\s+)\s*(?P<val>.+)$"
)
_CALL_EQ = re.compile(r"^(?P<call>.+?\))\s*(?:==|!=)\s*(?P<val>.+)$")


def guard_parts(text: str) -> tuple[str | None, str | None, str | None, str | None]:
    """A failed-guard text → (guard kind, source expression, expected, actual). The guard's identity
    is kind + source; ``L['x']`` is written ``x`` (as torch >= 2.6 prints it) so that one guard reads
    the same under every torch. E.g. ``tensor 'L['x']' size mismatch at index 1. expected 8, actual
    16`` → (size, ``x.size()[1]``, 8, 16); ``L['offset'] == 3`` → (equals, ``offset``, 3, None)."""
    full, code = _normalise(text)
    if not code:
        return None, None, None, None
    if _LIMIT.search(full):
        name, head = _LIMIT_NAME.search(full), _LIMIT_HEAD.search(full)
        return (
            "recompile_limit",
            name.group(0) if name else None,
            head.group(2) if head else None,
            None,
        )
    if m := _TENSOR.match(code):
        return _tensor_parts(
            _source(m.group("src")), m.group("prop").replace(".", " "), code[m.end() :]
        )
    if m := _CHECK_TENSORS.match(code):
        return "tensors", _source(m.group(1)), None, None
    if m := _GLOBAL_STATE.match(code):
        return "global_state", m.group(1).strip() or None, None, None
    if m := _GRAD_FUNCS.search(code):
        return "global_state", m.lastgroup, None, None
    if m := _CONFIG_FUNCS.search(code):
        return ("backend" if m.lastgroup == "backend" else "config"), m.lastgroup, None, None
    if m := _MESSAGE.match(code):
        kind = (
            "duplicate_tensors",
            "overlapping_tensors",
            "deallocated",
            "getattr",
            "key_error",
            "tensor_type",
        )
        i = next(i for i, g in enumerate(m.groups()) if g is not None)
        return kind[i], _source(m.group(i + 1)), None, None
    if _SHAPE_STRONG.search(code) or "unknown var " in full.split("\n", 1)[0]:
        return "symbolic", _shape_source(code), code, None
    alias = _ALIAS.match(code)
    if alias and _NOT_LITERAL.match(alias.group("other")):
        return "alias", _source(alias.group("src")), _source(alias.group("other")), None
    if m := _TYPE_ID.match(code):
        fn = _CALL.match(code)
        kind = (
            (fn.group("fn") if fn else "type_id")
            .lstrip("_")
            .removeprefix("check_")
            .replace(".", "_")
        )
        hint, eq = _TYPE_HINT.search(code), _CALL_EQ.match(code)
        expected = hint.group(1) if hint else eq.group("val").strip() if eq else _last_arg(code)
        return kind, _source(m.group("src")), expected, None
    if m := _NAN.search(code):
        return "isnan", _source(m.group("src")), None, None
    if m := _COMPARE.match(code):
        wrapped = _WRAPPER.match(m.group("src").strip())
        kind = {"==": "equals", "!=": "not_equals", "is": "is", "isnot": "is_not"}[
            m.group("op").replace(" ", "")
        ]
        kind = f"{wrapped.group(0).split('(')[0].lstrip('_')}_{kind}" if wrapped else kind
        return (
            kind,
            _source(wrapped.group(1) if wrapped else m.group("src")),
            m.group("val").strip(),
            None,
        )
    if m := _VALUE.match(code):
        return (
            "truth",
            _source(m.group("src")),
            "False" if code.startswith("not ") else "True",
            None,
        )
    if _SHAPE_WEAK.search(code):
        return "symbolic", _shape_source(code), code, None
    return "other", None, code, None


def _tensor_parts(
    src: str | None, prop: str, rest: str
) -> tuple[str, str | None, str | None, str | None]:
    v = _TENSOR_VALUES.search(rest.strip())
    exp, act = (v.group("exp"), v.group("act")) if v else (None, None)
    if prop in ("size", "sizes", "stride", "strides"):
        name = "stride" if prop.startswith("stride") else "size"
        idx = v.group("i") if v else None
        return name, f"{src}.{name}()" + (f"[{idx}]" if idx is not None else ""), exp, act
    if "device" in prop:
        return "device", f"{src}.device", exp, act
    kind, fmt = _TENSOR_KIND.get(prop, (prop.replace(" ", "_"), "{}"))
    if kind == "requires_grad" and act is None and exp in ("0", "1"):
        act = "1" if exp == "0" else "0"  # a flag that does not match has the other value
    return kind, fmt.format(src), exp, act


def _source(src: str | None) -> str | None:
    """A guard source as torch >= 2.6 prints it: ``L['x']`` → ``x`` (``G['g']`` stays)."""
    if src is None:
        return None
    s = re.sub(r"(?<![\w\]])L\[\s*(['\"])(\w+)\1\s*\]", r"\2", src.strip())
    return s.removesuffix(".__code__") or None


def _shape_source(code: str) -> str | None:
    m = re.search(rf"{_SRC}\.(?:size|stride)\(\)\[\d+\]|{_SRC}\.storage_offset\(\)", code)
    if m:
        return _source(m.group(0))
    m = _SYMBOL.search(code) or _ANY_SRC.search(code)
    return _source(m.group(0)) if m else None


def _last_arg(code: str) -> str | None:
    m = re.search(r",\s*([^,()]+)\)\s*$", code)
    return m.group(1).strip() if m else None

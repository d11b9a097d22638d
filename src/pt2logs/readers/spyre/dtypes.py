"""Torch-Spyre values as logged: dtypes and their widths, integer lists, ``SpyreTensorLayout(...)``."""

from __future__ import annotations

import math
import re
from typing import Any

import orjson

_I64 = 1 << 63

_TORCH_DTYPES = {
    k: (name, w)
    for name, w, keys in [
        ("float16", 2, "float16 half fp16"),
        ("bfloat16", 2, "bfloat16 bf16"),
        ("float32", 4, "float32 float fp32"),
        ("float64", 8, "float64 double"),
        ("int8", 1, "int8 char"),
        ("uint8", 1, "uint8 byte"),
        ("int16", 2, "int16 short"),
        ("uint16", 2, "uint16"),
        ("int32", 4, "int32 int"),
        ("uint32", 4, "uint32"),
        ("int64", 8, "int64 long"),
        ("uint64", 8, "uint64"),
        ("bool", 1, "bool"),
        ("complex32", 4, "complex32 complexhalf chalf"),
        ("complex64", 8, "complex64 complexfloat cfloat"),
        ("complex128", 16, "complex128 complexdouble cdouble"),
    ]
    for k in keys.split()
}
_DTYPE_PREFIX = re.compile(r"^(?:torch\.|c10::|at::|scalartype::)+")
_DEVICE_BITS = re.compile(r"(?:^|[_.])(?:B?FP|BF|U?INT|F|I|U)(8|16|32|64)(?:$|[_.A-Z])")


def torch_dtype(raw: str | None) -> tuple[str | None, int | None]:
    """(torch name, width in bytes) of a dtype as logged: Half, c10::Half, torch.float16, ...; (raw, None) if unknown."""
    if not raw:
        return None, None
    key = _DTYPE_PREFIX.sub("", raw.strip().lower())
    if key in _TORCH_DTYPES:
        return _TORCH_DTYPES[key]
    return (key, 1) if key.startswith("float8") else (raw.strip(), None)


def dtype_width(raw: str | None) -> int | None:
    """Element width in bytes of a torch dtype or a device data format (DataFormats.SEN169_FP16 → 2)."""
    if not raw:
        return None
    width = torch_dtype(raw.rsplit(".", 1)[-1] if raw.startswith("DataFormats.") else raw)[1]
    if width is None and (m := _DEVICE_BITS.search(raw.upper())):
        width = int(m.group(1)) // 8
    return width


def int64(v: Any) -> int | None:
    """An integer that fits a BIGINT column, else None (logs and JSON can hold anything)."""
    return v if type(v) is int and -_I64 <= v < _I64 else None


def int64_list(v: Any) -> list[int] | None:
    return v if isinstance(v, list) and all(int64(x) is not None for x in v) else None


def int_list(text: str) -> list[int] | None:
    try:
        return int64_list([int(x) for x in text.split(",") if x.strip()])
    except ValueError:
        return None


def nbytes(shape: list[int] | None, width: int | None) -> int | None:
    return int64(math.prod(shape) * width) if shape is not None and width else None


def loads(data: bytes | str) -> Any:
    """Parsed JSON, or the exception when it is not JSON."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        return e


_LAYOUT = re.compile(
    r"SpyreTensorLayout\(((?:[^()]|\([^()]*\))*)\)?"
)  # one level of nested parentheses; may be cut
_LAYOUT_KV = re.compile(r"(\w+)\s*=\s*(\[[^\]]*\]|[^,]*)")


def parse_layout(text: str) -> tuple[dict[str, Any], str] | None:
    """Fields of the first ``SpyreTensorLayout(...)`` in ``text`` (key=[...] / key=value, generically), and its text."""
    lay = _LAYOUT.search(text)
    if lay is None:
        return None
    fields: dict[str, Any] = {}
    for m in _LAYOUT_KV.finditer(lay.group(1)):
        v = m.group(2).strip()
        if v.startswith("["):
            fields[m.group(1)] = int_list(v[1:-1]) or [
                x.strip() for x in v[1:-1].split(",") if x.strip()
            ]
        else:
            fields[m.group(1)] = int64(int(v)) if v.lstrip("-").isdigit() and len(v) < 19 else v
    return fields, lay.group(0)

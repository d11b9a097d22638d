"""What the Spyre line reader's records become (:class:`~pt2logs.readers.spyre.lines.SpyreLines` assembles
them): a ``transfers`` row from a copy and the lines that described it (tensor info, allocation, layout, the
copy's source and destination, the DataConversionInfo block, the illustrative status line), a
``spyre_layouts`` row, the fields of a DataConversionInfo block.
"""

from __future__ import annotations

import math
from typing import Any

from pt2logs.readers.spyre import patterns as P
from pt2logs.readers.spyre.dtypes import (
    dtype_width,
    int64,
    int64_list,
    loads,
    nbytes,
    parse_layout,
    torch_dtype,
)

MAX_MESSAGE = 64 << 10


def new_tensor(at: dict, **kw: Any) -> dict[str, Any]:
    return {
        **at,
        "dtype": None,
        "host_shape": None,
        "host_strides": None,
        "device": None,
        "alloc": None,
        "layout": None,
        "parts": [],
        **kw,
    }


def transfer_row(x: dict[str, Any], codes: dict[int, str]) -> dict[str, Any]:
    """The ``transfers`` row of an assembled copy ``x``: its direction, host and device shapes, sizes and
    padding from whichever of its lines say them; ``codes``: DataConversionInfo dataformat code -> device
    dtype, learnt from this log (a layout that names both teaches it)."""
    dci, lay, alloc = x.get("dci") or {}, x.get("layout") or {}, x.get("alloc") or {}
    src, dst, direction = x.get("src"), x.get("dst"), x.get("direction")
    side = {None: None, True: "host", False: "device"}
    s, d = (
        side[src.startswith("cpu") if src else None],
        side[dst.startswith("cpu") if dst else None],
    )
    if direction is None and (s, d) != (None, None):
        direction = (
            f"{s}_to_{d}"
            if s and d
            else "host_to_device"
            if s == "host"
            else "device_to_host"
            if d == "host"
            else None
        )
    if direction is None and dci.get("isHostToSen_") in (0, 1):
        direction = "host_to_device" if dci["isHostToSen_"] == 1 else "device_to_host"
    dtype, width = torch_dtype(x.get("raw_dtype"))
    to_dev = direction != "device_to_host"
    host_key, dev_key = (
        ("input_shape_", "output_shape_") if to_dev else ("output_shape_", "input_shape_")
    )
    shape_from, host_shape = next(
        (
            (k, v)
            for k, v in (
                ("tensor_info", x.get("host_shape")),
                ("model_utils", x.get("name_shape")),
                ("illustrative", x.get("illus_shape")),
                ("dci", int64_list(dci.get(host_key)) if direction != "device_to_device" else None),
            )
            if v is not None
        ),
        (None, None),
    )
    device_size = lay.get("device_size") or (
        v[::-1] if (v := int64_list(dci.get(dev_key))) is not None else None
    )
    if host_shape is not None and shape_from == "dci":
        host_shape = host_shape[::-1]
    device_dtype, code = (
        lay.get("device_dtype"),
        int64(dci.get("dataformat_dst_" if to_dev else "dataformat_src_")),
    )
    if device_dtype is not None and code is not None:
        codes[code] = device_dtype
    elif device_dtype is None and code is not None:
        device_dtype = codes.get(code)
    host_bytes, device_bytes = (
        nbytes(host_shape, width),
        nbytes(device_size, dtype_width(device_dtype) or width),
    )
    both = host_bytes is not None and device_bytes is not None
    return {
        "source": "spyre",
        "line_no": x["line_no"],
        "end_line_no": x["end_line_no"],
        "ts": x["ts"],
        "func": x["func"],
        "direction": direction,
        "dtype": dtype,
        "host_shape": host_shape,
        "host_strides": x.get("host_strides"),
        "device": x.get("device")
        or (dst if d == "device" else src if s == "device" else None)
        or alloc.get("device"),
        "host_bytes": host_bytes,
        "device_size": device_size,
        "device_dtype": device_dtype,
        "device_bytes": device_bytes,
        "padding_bytes": device_bytes - host_bytes if both else None,  # type: ignore[operator]
        "padded_elements": int64(math.prod(device_size) - math.prod(host_shape))
        if host_shape is not None and device_size is not None
        else None,
        "stride_map": lay.get("stride_map"),
        "dim_map": lay.get("dim_map"),
        "alloc_bytes": alloc.get("nbytes"),
        "address": alloc.get("address"),
        "tensor_name": x.get("tensor_name"),
        "shape_from": shape_from,
        "dci_name": dci.get("dsName_") if isinstance(dci.get("dsName_"), str) else None,
        "dci": {k: dci[k] for k in P.DCI_KEYS if k in dci} or None,
        "parts": x["parts"],
        "complete": direction is not None and both,
        "status": x.get("status"),
        "alloc_line_no": alloc.get("line_no"),
        "layout_line_no": lay.get("line_no"),
        "n_lines": x["n_lines"],
    }


def layout_row(at: dict[str, Any], text: str, origin: str) -> dict[str, Any] | None:
    """A ``spyre_layouts`` row from a line printing a SpyreTensorLayout; None when it holds none. Its host
    dtype and shape come from the tensor or copy it belongs to; then :func:`layout_sizes`."""
    parsed = parse_layout(text)
    if parsed is None:
        return None
    f, raw = parsed
    lay = {
        "source": "spyre",
        **at,
        "origin": origin,
        "layout_text": raw[:MAX_MESSAGE],
        **{k: int64_list(f.pop(k, None)) for k in ("device_size", "dim_map", "stride_map")},
    }
    dd = f.pop("device_dtype", None)
    lay["device_dtype"], lay["fields"] = (str(dd) if dd is not None else None), (f or None)
    return lay


def layout_sizes(lay: dict[str, Any]) -> dict[str, Any]:
    """A layout row's device and host bytes and its padding."""
    lay["device_bytes"] = nbytes(
        lay["device_size"], dtype_width(lay["device_dtype"]) or dtype_width(lay.get("dtype"))
    )
    lay["host_bytes"] = nbytes(lay.get("host_shape"), dtype_width(lay.get("dtype")))
    if lay["host_bytes"] is not None and lay["device_bytes"] is not None:
        lay["padding_bytes"] = lay["device_bytes"] - lay["host_bytes"]
    return lay


def dci_fields(
    text: str, n: int, is_json: bool, truncated: bool
) -> tuple[dict[str, Any], str | None]:
    """The fields of a DataConversionInfo block of ``n`` lines, and what was wrong with it (None: nothing):
    a block that is no JSON, or was cut, keeps the simple fields found by pattern."""
    fields = loads(text) if is_json and not truncated else None
    if not isinstance(fields, dict):  # salvage the simple fields that are there
        fields = {}
        for m in P.JSON_KEY.finditer(text):
            if (
                m.group(1) in P.DCI_KEYS
                and m.group(1) not in fields
                and not isinstance(v := loads(m.group(2)), Exception)
            ):
                fields[m.group(1)] = v
        found = ", ".join(fields) or "none"
        msg = (
            "DataConversionInfo is not followed by JSON; the copy is kept without it"
            if not is_json
            else f"DataConversionInfo block cut after {n} line(s); fields before the cut kept ({found})"
            if truncated
            else f"DataConversionInfo block of {n} line(s) is not valid JSON; fields found by pattern kept ({found})"
        )
        return fields, msg
    return fields, None

"""vLLM's TORCH_TRACE artifacts → ``vllm_compiles`` and ``vllm_piecewise``.

vLLM (≥ 0.17) writes through torch's ``trace_structured`` inside the Dynamo compile its backend serves:

* ``artifact`` ``vllm_compilation_config`` (json): the compilation config, vllm/compilation/backends.py
  ``VllmBackend.__call__`` (``compile_ranges_split_points`` in 0.17, ``compile_ranges_endpoints`` from 0.20);
* ``graph_dump`` ``vllm_piecewise_split_graph``: the split graph's ``print_readable`` (backends.py);
* ``artifact`` ``vllm_piecewise_compile_start`` (json: ``piecewise_index``, ``submod_name``,
  ``total_piecewise_compiles``, ``compile_range_start``, ``compile_range_end``, ``is_single_size``,
  ``is_cudagraph_capture_size``): compilation/piecewise_backend.py ``_log_compile_start``, before each compile
  (or load from vLLM's cache) of one subgraph for one range;
* ``graph_dump`` ``vllm_submod_N`` (the subgraph, once; tlparse also accepts ``vllm_subgraph_*``) and
  ``artifact`` ``vllm_execution_code`` (codegen.py, 0.20+): kept in ``events`` only.

A compile's rows wait in its scratch space until its ``compilation_metrics`` (which also ends the last
piecewise compile's time), or the end of the file.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

import orjson

from pt2logs.readers.trace.state import TraceState

_SUBMOD = re.compile(rb"\bsubmod_(\d+)\b")
#: config field -> column (the rest stay in ``config``)
_CONFIG = {
    "model": "model",
    "prefix": "prefix",
    "mode": "mode",
    "backend": "backend",
    "cudagraph_mode": "cudagraph_mode",
    "splitting_ops": "splitting_ops",
    "compile_sizes": "compile_sizes",
    "compile_ranges_endpoints": "compile_ranges",
    "compile_ranges_split_points": "compile_ranges",
    "use_inductor_graph_partition": "inductor_graph_partition",
    "dynamic_shapes_type": "dynamic_shapes_type",
}


def _now_us(st: TraceState) -> int | None:
    """The current record's local time in µs on a day scale (for differences within one file)."""
    rec = st.rec
    if rec is None:
        return None
    bump, mmdd = divmod(st.key, 10000)
    try:
        day = date(
            2000 + bump, mmdd // 100, mmdd % 100
        ).toordinal()  # 2000: a leap year, so 02-29 is a date
    except ValueError:
        return None
    return day * 86_400_000_000 + rec.tod_us


def _state(st: TraceState, cid: str | None) -> dict[str, Any]:
    sc = st.scratch(cid)
    v = sc.get("vllm")
    if v is None:
        v = sc["vllm"] = {
            "compile": None,
            "open": None,
            "n": 0,
            "ranges": set(),
            "seconds": 0.0,
            "timed": 0,
        }
    return v


def _close_open(st: TraceState, v: dict[str, Any], end_us: int | None) -> None:
    row = v["open"]
    if row is None:
        return
    v["open"] = None
    start = row.pop("_us")
    if end_us is not None and start is not None and end_us >= start:
        row["seconds"] = (end_us - start) / 1e6
        v["seconds"] += row["seconds"]
        v["timed"] += 1
    st.add("vllm_piecewise", row)


def _emit_compile(st: TraceState, v: dict[str, Any]) -> None:
    row = v["compile"]
    if row is None:
        return
    v["compile"] = None
    row.update(
        n_piecewise=v["n"],
        n_ranges=len(v["ranges"]),
        piecewise_s=round(v["seconds"], 6) if v["timed"] else None,
    )
    st.add("vllm_compiles", row)


def compilation_config(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    data = st.json_payload()
    if not isinstance(data, dict):
        return
    v = _state(st, cid)
    _close_open(st, v, _now_us(st))
    _emit_compile(st, v)  # a second config in the same compile: the first one's rows are done
    v.update(n=0, ranges=set(), seconds=0.0, timed=0)
    row: dict[str, Any] = {
        "line_no": st.rec.line_no,
        "ts": (st.key, st.rec.tod_us),
        "compile_id": cid,
        "config": orjson.dumps(data).decode(),
    }
    for k, col in _CONFIG.items():
        if k in data:
            row[col] = data[k]
    v["compile"] = row


def piecewise_compile_start(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    data = st.json_payload()
    if not isinstance(data, dict):
        return
    v = _state(st, cid)
    now = _now_us(st)
    _close_open(st, v, now)
    start, end = data.get("compile_range_start"), data.get("compile_range_end")
    v["n"] += 1
    v["ranges"].add(
        repr((start, end))
    )  # any JSON value: a damaged payload is a bad value, not an exception
    v["open"] = {
        "line_no": st.rec.line_no,
        "ts": (st.key, st.rec.tod_us),
        "compile_id": cid,
        "_us": now,
        "piecewise_index": data.get("piecewise_index"),
        "submod_name": data.get("submod_name"),
        "total_piecewise": data.get("total_piecewise_compiles"),
        "range_start": start,
        "range_end": end,
        "single_size": data.get("is_single_size"),
        "cudagraph_size": data.get("is_cudagraph_capture_size"),
    }


def graph_dump(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    """The split graph names its submodules: their count is the piecewise split's size."""
    if not isinstance(meta, dict) or meta.get("name") != "vllm_piecewise_split_graph":
        return
    p = st.rec.payload if st.rec is not None else None
    v = _state(st, cid)
    if p and v["compile"] is not None:
        v["compile"]["n_subgraphs"] = len(set(_SUBMOD.findall(p)))


def on_metrics(st: TraceState, kind: str, meta: Any, cid: str | None) -> None:
    if kind != "compilation_metrics":
        return
    sc = st.compiles.get(cid or "")
    v = sc.get("vllm") if sc is not None else None
    if v is not None:
        _close_open(st, v, _now_us(st))
        _emit_compile(st, v)
        del sc["vllm"]


def finish(st: TraceState) -> None:
    """The file ended: rows of compiles whose metrics never came (the last piecewise compile untimed)."""
    for sc in st.compiles.values():
        v = sc.pop("vllm", None)
        if v is not None:
            _close_open(st, v, None)
            _emit_compile(st, v)

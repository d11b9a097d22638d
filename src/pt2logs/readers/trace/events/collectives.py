"""The collectives of compiled graphs (``collective_schedule``), from the artifacts inductor writes for
tlparse's multi-rank report (torch/_inductor/debug.py; fx_passes/spmd_check.py):

* ``inductor_collective_schedule``: ``["torch.ops._c10d_functional.all_reduce_.default",
  "torch.ops._c10d_functional.wait_tensor.default", ...]`` — the graph's collectives and waits in
  scheduler order, logged whenever a graph has one;
* ``inductor_runtime_and_tensor_meta``: ``{"ops": [{"name", "type": "compute" | "collective",
  "estimated_runtime_ns", "outputs": [{"shape", "stride", "dtype"}]}]}`` (``LOG_TLPARSE=1``);
* ``graph_execution``: ``{"graph_execution_order": [{"compile_id": "0/0"}, ...]}`` (inside
  ``torch._inductor.debug.record_and_log_graph_execution_order()``, logged once at its exit);
* ``inductor_spmd_graph_mismatch``: the text report of the SPMD graph check.

Waits are paired with collectives in order: each wait takes the first collective not yet paired (what
tlparse's collectives parity counts: a collective without a wait is a missing wait).
"""

from __future__ import annotations

from typing import Any

import orjson

from pt2logs.readers.trace.state import TraceState


def _is_wait(op: str) -> bool:
    return "wait_tensor" in op or op.rsplit(".", 2)[-1] in ("wait", "wait_tensor")


def _rows(st: TraceState, cid: str | None, artifact: str, ops: list[dict[str, Any]]) -> None:
    open_: list[int] = []
    for i, r in enumerate(ops):
        r["wait_for"] = None
        if r["op_type"] == "wait":
            if open_:
                j = open_.pop(0)
                r["wait_for"], ops[j]["wait_for"] = j, i
        elif r["op_type"] == "collective":
            open_.append(i)
    for i, r in enumerate(ops):
        st.add(
            "collective_schedule",
            {**st.where(cid), "artifact": artifact, "seq": i, **r},
        )


def schedule(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    data = st.json_payload()
    if not isinstance(data, list):
        return
    ops = [
        {"op": str(op), "op_type": "wait" if _is_wait(str(op)) else "collective"}
        for op in data
        if op is not None
    ]
    _rows(st, cid, "inductor_collective_schedule", ops)


def runtime_and_tensor_meta(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    data = st.json_payload()
    ops = data.get("ops") if isinstance(data, dict) else None
    if not isinstance(ops, list):
        return
    rows = []
    for op in ops:
        if not isinstance(op, dict):
            continue
        name = None if op.get("name") is None else str(op.get("name"))
        t = op.get("type")
        rt = op.get("estimated_runtime_ns")
        rows.append(
            {
                "op": name,
                "op_type": "wait"
                if name and _is_wait(name)
                else (str(t) if t is not None else None),
                "estimated_runtime_ns": float(rt) if isinstance(rt, (int, float)) else None,
                "outputs": orjson.dumps(op.get("outputs"), option=orjson.OPT_SORT_KEYS).decode()
                if op.get("outputs") is not None
                else None,
            }
        )
    _rows(st, cid, "inductor_runtime_and_tensor_meta", rows)


def graph_execution(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    data = st.json_payload()
    order = data.get("graph_execution_order") if isinstance(data, dict) else None
    if not isinstance(order, list):
        return
    for i, g in enumerate(order):
        ran = g.get("compile_id") if isinstance(g, dict) else None
        ran = None if ran is None else str(ran)
        st.add("collective_schedule", dict(st.where(ran), artifact="graph_execution", seq=i))


def spmd_mismatch(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    st.add(
        "collective_schedule",
        dict(
            st.where(cid),
            artifact="inductor_spmd_graph_mismatch",
            report=st.text(),
        ),
    )

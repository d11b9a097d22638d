"""Bookkeeping events: the string table, the frame being compiled, the torch version (the
``torch_version`` artifact, torch/_logging/_internal.py ``_log_torch_version``; else a repro payload's line)."""

from __future__ import annotations

from typing import Any

from pt2logs.readers.read_stats import repro_torch_version
from pt2logs.readers.trace.state import TraceState


def string_table(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    """``{"str": [path, id]}`` interns a file name for later stack frames."""
    if isinstance(meta, list) and len(meta) == 2 and isinstance(meta[1], int):
        st.strings[meta[1]] = str(meta[0])


def resolve(st: TraceState, filename: Any) -> str | None:
    if isinstance(filename, int):
        return st.strings.get(filename)
    return filename if isinstance(filename, str) else None


def dynamo_start(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    """Remember the frame being compiled: the innermost entry of the stack (its current line
    stands in for co_firstlineno until the compile's metrics give the real one)."""
    stack = meta.get("stack") if isinstance(meta, dict) else None
    if not stack:
        stack = env.get("stack")
    if isinstance(stack, list) and stack and isinstance(stack[-1], dict) and cid is not None:
        top = stack[-1]
        line = top.get("line")
        st.frames[cid] = (
            top.get("name"),
            resolve(st, top.get("filename")),
            line if isinstance(line, int) else None,
        )


def torch_version(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    data = st.json_payload()
    if isinstance(data, dict):
        v = data.get("pytorch_version") or data.get("torch_version")
        if isinstance(v, str):
            st.stats.note_torch(v, "torch_version_artifact")


def repro_version(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    """torch's repro writer heads ``fx_graph_runnable`` with ``# torch version: X`` (after the config lines)."""
    if st.stats.torch_from in ("torch_version_artifact", "repro_payload"):
        return
    p = st.rec.payload if st.rec is not None else None
    if p:
        st.stats.note_torch(repro_torch_version(p), "repro_payload")

"""Dynamic shapes → ``dynamic_shapes``; CUDA-graph skips in the metrics → ``cudagraph_skips``.

The records, as torch 2.13 writes them (torch/fx/experimental/symbolic_shapes.py; frames are
``{"line", "name", "filename" (a string-table id), "loc"}``):

* ``create_symbol``: symbol, val, vr, source, user_stack, stack;
* ``create_unbacked_symbol``: symbol, node_id, vr, user_stack, stack;
* ``symbolic_shape_specialization``: symbol, sources, value, reason, stack, user_stack (often null);
* ``guard_added_fast``: expr, user_stack, stack; ``guard_added`` (TORCH_DTRACE only): expr, prefix,
  user_stack, symbol_to_sources, frame_locals — both are written for one guard under TORCH_DTRACE, so a
  ``guard_added_fast`` right after a ``guard_added`` of the same expression is not a second row;
* ``propagate_real_tensors``: expr, result, stack;
* ``guard_on_data_dependent_error`` (TORCH_DTRACE only): expr, unhinted_expr, expr_id, stack.

The user line is the innermost frame of ``user_stack``; a record without one (a specialization, a
data-dependent error, a propagated value) takes the user line of the compile's last guard that named its
symbol, else the line that created the symbol (for a data-dependent error, the branch's own line is the
compile's graph break).
"""

from __future__ import annotations

import re
from typing import Any

from pt2logs.analysis import cudagraphs
from pt2logs.readers.trace.events.basics import resolve
from pt2logs.readers.trace.state import TraceState

_SYMBOL = re.compile(r"\b(?:[su]\d+|zu?f\d+)\b")
#: scratch key: symbol -> the user frame of the compile's last guard naming it
_GUARD_FRAMES = "shape_guard_frames"
_LAST_GUARD = "shape_last_guard"
_NO_FRAME = {"frame_file": None, "frame_line": None, "frame_func": None, "frame_code": None}


def _frame(st: TraceState, f: Any) -> dict[str, Any] | None:
    if not isinstance(f, dict):
        return None
    line = f.get("line")
    loc = f.get("loc")
    return {
        "frame_file": resolve(st, f.get("filename")),
        "frame_line": line if isinstance(line, int) and -(2**31) <= line < 2**31 else None,
        "frame_func": f.get("name") if isinstance(f.get("name"), str) else None,
        "frame_code": loc if isinstance(loc, str) else None,
    }


def user_frame(st: TraceState, meta: dict) -> dict[str, Any] | None:
    """The innermost frame of the record's user stack (the traced user line). Its ``stack`` is not used:
    the frame being traced is not on the Python stack, whose innermost user frame is the call into the
    compiled function."""
    us = meta.get("user_stack")
    return _frame(st, us[-1]) if isinstance(us, list) and us else None


def _text(v: Any) -> str | None:
    return None if v is None else v if isinstance(v, str) else str(v)


def _add(st: TraceState, cid: str | None, event: str, meta: dict, **cols: Any) -> None:
    """A row; its user line: ``frame``, else the record's user stack, else the last one seen for its symbol
    in this compile (the guard that named it, else where it was created)."""
    frame = cols.pop("frame", None) or user_frame(st, meta)
    sym = cols.get("symbol")
    frames = st.scratch(cid).setdefault(_GUARD_FRAMES, {})
    if frame is None:
        frame = frames.get(sym) or _NO_FRAME
    elif event.startswith("create") and sym:
        frames.setdefault(sym, frame)
    st.add("dynamic_shapes", {**st.where(cid), "event": event, **cols, **frame})


def create_symbol(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    if isinstance(meta, dict):
        src = meta.get("source")
        _add(
            st,
            cid,
            "create_symbol",
            meta,
            symbol=_text(meta.get("symbol")),
            sources=None if src is None else [_text(src)],
            value=_text(meta.get("val")),
            value_range=_text(meta.get("vr")),
        )


def create_unbacked_symbol(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    if isinstance(meta, dict):
        _add(
            st,
            cid,
            "create_unbacked_symbol",
            meta,
            symbol=_text(meta.get("symbol")),
            value_range=_text(meta.get("vr")),
        )


def specialization(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    if not isinstance(meta, dict):
        return
    sym = _text(meta.get("symbol"))
    srcs = meta.get("sources")
    _add(
        st,
        cid,
        "specialization",
        meta,
        symbol=sym,
        sources=[_text(s) for s in srcs] if isinstance(srcs, list) else None,
        value=_text(meta.get("value")),
        reason=_text(meta.get("reason")),
    )


def _guard(st: TraceState, cid: str | None, meta: Any, event: str) -> None:
    if not isinstance(meta, dict):
        return
    expr = _text(meta.get("expr"))
    sc = st.scratch(cid)
    if event == "guard_fast" and sc.pop(_LAST_GUARD, None) == expr:
        return  # the guard_added row of this guard came just before (TORCH_DTRACE writes both)
    if event == "guard":
        sc[_LAST_GUARD] = expr
    frame = user_frame(st, meta)
    symbols = _SYMBOL.findall(expr or "")
    if frame is not None:
        frames = sc.setdefault(_GUARD_FRAMES, {})
        for s in symbols:
            frames[s] = frame
    s2s = meta.get("symbol_to_sources")
    _add(
        st,
        cid,
        event,
        meta,
        frame=frame,
        symbol=symbols[0] if symbols else None,
        sources=[_text(v) for v in s2s.values()] if isinstance(s2s, dict) and s2s else None,
        expr=expr,
        reason=_text(meta.get("prefix")),
    )


def guard_added(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    _guard(st, cid, meta, "guard")


def guard_added_fast(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    _guard(st, cid, meta, "guard_fast")


def propagate_real_tensors(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    _expr_row(st, cid, meta, "propagate_real_tensors", "value", "result")


def data_dependent_error(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    _expr_row(st, cid, meta, "data_dependent_error", "reason", "unhinted_expr")


def _expr_row(st: TraceState, cid: str | None, meta: Any, event: str, col: str, key: str) -> None:
    """A row about one expression: its first symbol, the expression, and ``meta[key]`` as ``col``."""
    if isinstance(meta, dict):
        expr = _text(meta.get("expr"))
        syms = _SYMBOL.findall(expr or "")
        _add(
            st,
            cid,
            event,
            meta,
            symbol=syms[0] if syms else None,
            expr=expr,
            **{col: _text(meta.get(key))},
        )


def on_metrics(st: TraceState, kind: str, meta: dict[str, Any], cid: str | None) -> None:
    """A compile's ``cudagraph_skip_reason`` → a ``cudagraph_skips`` row; the compile's shape scratch is let go
    (memory bounded by the compiles in flight)."""
    sc = st.compiles.get(cid or "")
    if sc is not None:
        sc.pop(_GUARD_FRAMES, None)
        sc.pop(_LAST_GUARD, None)
    text = meta.get("cudagraph_skip_reason")
    if not isinstance(text, str) or not text.strip():
        return
    row = cudagraphs.parse(text) or cudagraphs.unknown(text)
    file, line = row.pop("user_file"), row.pop("user_line")
    st.add(
        "cudagraph_skips",
        {
            **st.where(cid),
            **row,
            "co_name": _text(meta.get("co_name")),
            "frame_file": file,
            "frame_line": line,
            "frame_func": None,
            "frame_code": None,
        },
    )

"""chromium_event → ``compile_phases``: pair B/E events into nested spans.

Payloads look like ``{"name": "backend_compile", "ts": <epoch µs>, "ph": "B",
"args": {"compile_id": "0/0"}, "cat": "dynamo_timed"}``. Spans are properly
nested per process (dynamo_timed is a context manager); an ``E`` closes the
innermost open span of the same name (and compile id), leaving spans opened after it
open: async work can overlap rather than nest. Spans still open at the end of the file
are kept with a NULL duration (reported as warnings), an ``E`` with no open
span is reported. Instants (``ph: "i"``) become zero-length rows. The epoch
``ts`` also calibrates the file's time base (see :mod:`..timebase`).
"""

from __future__ import annotations

from typing import Any

import orjson

from pt2logs.readers.torch_trace import TraceState, handles

#: hooks called with (state, payload dict, compile_id) for every instant event
INSTANT_HOOKS: list = []

#: spans that are the root of a stage of compilation
ROOTS = {"entire_frame_compile": "frame_compile", "entire_backward_compile": "backward_compile"}
#: spans that wrap a compile (and bookkeeping beside it) rather than being part of it
WRAPPERS = {"dynamo"}


def _stage(name: str, cid: str | None, spans: list) -> tuple[str, bool]:
    """(stage, top_level) of a span opening inside the currently open ``spans``."""
    if name in ROOTS:
        return ROOTS[name], True
    for sp in reversed(spans):
        if sp[9] in ("frame_compile", "backward_compile"):
            return sp[9], False
    if name in WRAPPERS:
        return "wrapper", False
    if spans:
        return spans[-1][9], False
    return ("runtime" if cid is not None else "other"), True


def _cid(args: Any, fallback: str | None) -> str | None:
    if isinstance(args, dict):
        c = args.get("compile_id")
        if isinstance(c, str) and c != "None":
            return c
    return fallback


@handles("chromium_event")
def chromium_event(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    d = st.json_payload()
    if not isinstance(d, dict):
        return
    ts = d.get("ts")
    ph = d.get("ph")
    name = d.get("name")
    if not isinstance(ts, (int, float)) or not isinstance(name, str):
        st.error("bad_chromium_event", st.rec.line_no, "chromium event without name or ts", st.rec.payload or b"")
        return
    st.tb.observe(st.key, st.rec.tod_us, ts)
    args = d.get("args")
    spans = st.spans
    if ph == "B":
        parent = spans[-1][0] if spans else None
        c = _cid(args, cid)
        stage, top = _stage(name, c, spans)
        spans.append([name, c, int(ts), len(spans), parent, args, st.rec.line_no, d.get("cat"), st.rank, stage, top])
    elif ph == "E":
        c = _cid(args, cid)
        match = -1
        for i in range(len(spans) - 1, -1, -1):
            if spans[i][0] == name:
                if spans[i][1] == c:
                    match = i
                    break
                if match < 0:
                    match = i
        if match >= 0:
            # overlapping (not nested) spans happen with async work: close only the match
            _emit(st, spans.pop(match), int(ts), args)
            return
        st.error("unmatched_span_end", st.rec.line_no, f"end of span {name!r} with no open begin", b"")
    elif ph in ("i", "I", "X"):
        dur = d.get("dur") if ph == "X" else 0
        c = _cid(args, cid)
        stage, top = _stage(name, c, spans)
        st.add("compile_phases", {"stage": stage, "top_level": top and ph == "X",
            "source": "trace", "compile_id": c, "phase": name, "parent_phase": spans[-1][0] if spans else None,
            "depth": len(spans), "start_us": int(ts), "duration_us": int(dur) if isinstance(dur, (int, float)) else None,
            "ts": int(ts), "is_instant": ph != "X", "category": d.get("cat"),
            "args": orjson.dumps(args, default=str).decode() if args else None,
        })
        if ph != "X":
            for hook in INSTANT_HOOKS:
                hook(st, d, c)


def _emit(st: TraceState, span: list, end_us: int | None, end_args: Any = None) -> None:
    name, cid, start, depth, parent, args, line_no, cat, rank, stage, top = span
    merged = args
    if isinstance(end_args, dict) and end_args:
        merged = {**args, **end_args} if isinstance(args, dict) else end_args
    if end_us is None:
        st.error("unclosed_span", line_no, f"span {name!r} has no end event; kept with NULL duration", b"")
    st.add("compile_phases", {
        "source": "trace", "compile_id": cid, "phase": name, "parent_phase": parent, "depth": depth,
        "start_us": start, "duration_us": None if end_us is None else end_us - start, "ts": start,
        "is_instant": False, "category": cat, "line_no": line_no, "rank": rank, "stage": stage, "top_level": top,
        "args": orjson.dumps(merged, default=str).decode() if merged else None,
    })


def finish(st: TraceState) -> None:
    while st.spans:
        _emit(st, st.spans.pop(), None)

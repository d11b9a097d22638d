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

from pt2logs.readers.segment_rows import NativeTupleRows
from pt2logs.readers.trace.events.metrics import FRAME_SPAN_US
from pt2logs.readers.trace.state import TraceState
from pt2logs.tables.rows import TupleRows

#: compile_phases fields, in the order rows are built (TupleRows: one tuple per row)
FIELDS = (
    "source",
    "file",
    "rank",
    "line_no",
    "compile_id",
    "phase",
    "parent_phase",
    "depth",
    "stage",
    "top_level",
    "start_us",
    "duration_us",
    "ts",
    "is_instant",
    "category",
    "args",
)

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


_loads = orjson.loads


def chromium_event(st: TraceState, env: dict | None, meta: Any, cid: str | None) -> None:
    # the most frequent record kind: keep this path lean (no helper calls on the common path)
    rec = st.rec
    try:
        d = _loads(rec.payload)  # orjson takes the tab-free payload bytes as they are
    except (orjson.JSONDecodeError, TypeError):
        st.json_payload()  # reports the error
        return
    if type(d) is not dict:
        return
    ts = d.get("ts")
    ph = d.get("ph")
    name = d.get("name")
    if not isinstance(ts, (int, float)) or not isinstance(name, str):
        st.error(
            "bad_chromium_event",
            rec.line_no,
            "chromium event without name or ts",
            rec.payload or b"",
        )
        return
    if st.tb.year is None:
        st.tb.observe(st.key, rec.tod_us, ts)
    args = d.get("args")
    spans = st.spans
    c = cid
    if type(args) is dict:
        a = args.get("compile_id")
        if type(a) is str and a != "None":
            c = a
    if ph == "B":
        parent = spans[-1][0] if spans else None
        stage, top = _stage(name, c, spans)
        spans.append(
            [
                name,
                c,
                int(ts),
                len(spans),
                parent,
                args,
                rec.line_no,
                d.get("cat"),
                st.rank,
                stage,
                top,
            ]
        )
    elif ph == "E":
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
        st.error(
            "unmatched_span_end", st.rec.line_no, f"end of span {name!r} with no open begin", b""
        )
    elif ph in ("i", "I", "X"):
        dur = d.get("dur") if ph == "X" else 0
        stage, top = _stage(name, c, spans)
        st.tuples("compile_phases", FIELDS).rows.append(
            (
                "trace",
                st.ctx.file,
                st.rank,
                st.rec.line_no,
                c,
                name,
                spans[-1][0] if spans else None,
                len(spans),
                stage,
                top and ph == "X",
                int(ts),
                int(dur) if isinstance(dur, (int, float)) else None,
                int(ts),
                ph != "X",
                d.get("cat"),
                orjson.dumps(args, default=str) if args else None,
            )
        )


def _emit(st: TraceState, span: list, end_us: int | None, end_args: Any = None) -> None:
    name, cid, start, depth, parent, args, line_no, cat, rank, stage, top = span
    if type(args) is bytes:  # kept canonical by the native handler (_native/phases.c)
        args = _loads(args)
    merged = args
    if isinstance(end_args, dict) and end_args:
        merged = {**args, **end_args} if isinstance(args, dict) else end_args
    if end_us is None:
        st.error(
            "unclosed_span",
            line_no,
            f"span {name!r} has no end event; kept with NULL duration",
            b"",
        )
    elif name == "entire_frame_compile":
        st.scratch(cid)[FRAME_SPAN_US] = (
            end_us - start
        )  # for a metrics record without compile times
    st.tuples("compile_phases", FIELDS).rows.append(
        (
            "trace",
            st.ctx.file,
            rank,
            line_no,
            cid,
            name,
            parent,
            depth,
            stage,
            top,
            start,
            None if end_us is None else end_us - start,
            start,
            False,
            cat,
            orjson.dumps(merged, default=str) if merged else None,
        )
    )


#: the compile_phases columns the native handler writes (``_native/phase_cols.c``, in this order); source and
#: file are shared
NATIVE_FIELDS = FIELDS[2:]


def native_handler(chromium: Any, phase_cols: Any) -> Any:
    """:func:`chromium_event` for the native record loop: the payload is done by ``chromium``
    (``_native/phases.c``: the same spans, and the same rows written as Arrow columns into a ``phase_cols``
    beside the tuples, args kept as canonical JSON bytes in open spans) when it is in that file's JSON
    subset, its values fit their columns and the time base is set; otherwise by :func:`chromium_event`."""

    def handler(st: TraceState, env: dict | None, meta: Any, cid: str | None) -> None:
        rec = st.rec
        if (
            st.tb.year is None
        ):  # the time base first, as chromium_event sets it (so the span opened is native)
            try:
                d = _loads(rec.payload)
            except (orjson.JSONDecodeError, TypeError):
                d = None
            if (
                type(d) is dict
                and isinstance(d.get("ts"), (int, float))
                and isinstance(d.get("name"), str)
            ):
                st.tb.observe(st.key, rec.tod_us, d["ts"])
        if st.tb.year is not None:
            acc = native_rows(st, phase_cols)
            r = chromium(
                acc.native,
                rec.payload,
                cid,
                st.spans,
                acc.rows,
                st.rank,
                rec.line_no,
                ROOTS,
                WRAPPERS,
            )
            if r:
                if type(r) is tuple:  # an entire_frame_compile span closed
                    st.scratch(r[0])[FRAME_SPAN_US] = r[1]
                return
        chromium_event(st, env, meta, cid)

    return handler


def native_args(st: TraceState, phase_cols: Any, handler: Any, ready: bool) -> tuple:
    """What the native events pass needs to do the chromium events itself (see ``_native/events.c``)."""
    acc = native_rows(st, phase_cols)
    return handler, acc.native, st.spans, acc.rows, ROOTS, WRAPPERS, ready


def native_rows(st: TraceState, phase_cols: Any) -> NativeTupleRows:
    """The file's compile_phases rows, from now on taking native rows too (a ``phase_cols()`` beside the tuples)."""
    acc = st.out.rows.get("compile_phases")
    if type(acc) is not NativeTupleRows:  # once per file
        tuples = acc
        acc = st.out.rows["compile_phases"] = NativeTupleRows(
            "compile_phases",
            FIELDS,
            phase_cols(),
            NATIVE_FIELDS,
            {"source": "trace", "file": st.ctx.file},
        )
        if isinstance(tuples, TupleRows):
            acc.rows = tuples.rows  # the rows the Python handler made before
    return acc


def finish(st: TraceState) -> None:
    while st.spans:
        _emit(st, st.spans.pop(), None)

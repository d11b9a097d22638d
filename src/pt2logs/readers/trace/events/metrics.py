"""compilation_metrics (and bwd / runtime variants) → ``compilation_metrics``.

Every field torch emits gets its own column (torch 2.13 has ~99); fields this
version of pt2logs does not know, and values that do not fit their column's
type, are kept in the ``extra`` JSON column instead of being dropped.

Compile times: torch 2.6 nightlies log only the fields that replaced the ``*_time_s`` ones
(``dynamo_cumulative_compile_time_us``, ...); later torch fills the old fields from the new ones
(``legacy_metrics`` in torch/_dynamo/utils.py). So does this reader, with the same mapping
(:data:`LEGACY`); a frame compile with neither gets ``entire_frame_compile_time_s`` from its
``entire_frame_compile`` span, which closes right before the metrics record. Every query that sums
compile time then counts these compiles instead of adding 0 s. The record as logged stays in ``events``.
"""

from __future__ import annotations

from typing import Any

import orjson

from pt2logs.readers.trace.state import TraceState
from pt2logs.tables import TABLES
from pt2logs.tables.core import CM_OWN
from pt2logs.tables.rows import _coerce

KINDS = (
    "compilation_metrics",
    "bwd_compilation_metrics",
    "compilation_metrics_runtime",
    "bwd_compilation_metrics_runtime",
)

#: legacy field -> the µs field torch fills it from when the record lacks it (torch's own rule)
LEGACY = {
    "entire_frame_compile_time_s": "dynamo_cumulative_compile_time_us",
    "backend_compile_time_s": "aot_autograd_cumulative_compile_time_us",
    "inductor_compile_time_s": "inductor_cumulative_compile_time_us",
    "code_gen_time_s": "inductor_code_gen_cumulative_compile_time_us",
}
#: scratch key under which phases.py leaves the duration (µs) of a compile's last entire_frame_compile span
FRAME_SPAN_US = "frame_compile_span_us"

_COLS = {c.name: c.kind for c in TABLES["compilation_metrics"].columns if c.name not in CM_OWN}
#: fields whose names are stamped columns: kept in ``extra``
_STAMPED = frozenset(("run_id", "rank", "txn"))
#: the Python type a value of a column kind already has when it needs no conversion (a str with lone
#: surrogates, which orjson never makes, would still be caught where the column becomes Arrow)
_AS_IS = {"str": str, "json": str, "f64": float, "bool": bool}
_INT_LIMIT = {"i32": 2**31, "i64": 2**63}


def compilation_metrics(
    st: TraceState, env: dict, meta: Any, cid: str | None
) -> tuple[str, str | None] | None:
    """The ``compilation_metrics`` row; returns the record's kind and compile id for the hooks that run after
    it (:data:`pt2logs.readers.trace.handlers.METRICS_HOOKS`), None when its metadata is not an object."""
    if not isinstance(meta, dict):
        st.error(
            "bad_metadata",
            st.rec.line_no if st.rec else None,
            "compilation_metrics metadata is not an object",
            str(meta)[:200],
        )
        return None
    kind = next(k for k in env if k in KINDS)
    row: dict[str, Any] = {"kind": kind}
    extra: dict[str, Any] = {}
    cols, as_is, ints = _COLS, _AS_IS, _INT_LIMIT
    for k, v in meta.items():
        ck = cols.get(k)
        if ck is None or k in _STAMPED:
            extra[k] = v
            continue
        # ~100 fields a record: most already of their column's type (what _coerce would return unchanged)
        t = type(v)
        if (
            v is None
            or t is as_is.get(ck)
            or (t is int and ck in ints and -ints[ck] <= v < ints[ck])
        ):
            row[k] = v
            continue
        c = _coerce(ck, v)
        if c is None and v is not None:
            extra[k] = v  # did not fit the column type: keep the value
        row[k] = c
    if row.get("compile_id") is None:
        row["compile_id"] = cid
    _fill_compile_times(st, kind, row)
    if extra:
        row["extra"] = orjson.dumps(extra, default=str).decode()
    start = meta.get("start_time")
    if isinstance(start, (int, float)) and start > 0:
        st.tb.observe(st.key, st.rec.tod_us, start * 1e6)
        row["ts"] = int(start * 1e6)
    st.add("compilation_metrics", row)
    v = meta.get("pytorch_version")
    if isinstance(v, str):
        st.stats.note_torch(v, "compilation_metrics")
    py = meta.get("python_version")
    if isinstance(py, str) and py.strip() and not st.stats.python_version:
        st.stats.python_version = py.split()[
            0
        ]  # "3.12.3 (main, Aug 31 2026, 10:18:26) [GCC 13.3.0]"
    return kind, row.get("compile_id") or cid


def _fill_compile_times(st: TraceState, kind: str, row: dict[str, Any]) -> None:
    """Legacy compile-time fields from their replacements, as torch does; else the frame's span."""
    for legacy, us in LEGACY.items():
        v = row.get(us)
        if row.get(legacy) is None and isinstance(v, int):
            row[legacy] = v / 1e6
    sc = st.compiles.get(row.get("compile_id") or "")
    span_us = sc.pop(FRAME_SPAN_US, None) if sc is not None else None
    if (
        kind == "compilation_metrics"
        and row.get("entire_frame_compile_time_s") is None
        and span_us is not None
    ):
        row["entire_frame_compile_time_s"] = span_us / 1e6
    start, end = row.get("start_time_us"), row.get("end_time_us")
    if (
        kind == "compilation_metrics"
        and row.get("compile_id") is None
        and row.get("entire_frame_compile_time_s") is None
        and isinstance(start, int)
        and isinstance(end, int)
        and end >= start
    ):
        # a compile without a compile id (AOTInductor, export) logs no *_time_s: its start to its end
        row["entire_frame_compile_time_s"] = (end - start) / 1e6

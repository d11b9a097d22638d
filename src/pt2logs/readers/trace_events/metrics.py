"""compilation_metrics (and bwd / runtime variants) → ``compilation_metrics``.

Every field torch emits gets its own column (torch 2.13 has ~99); fields this
version of pt2logs does not know, and values that do not fit their column's
type, are kept in the ``extra`` JSON column instead of being dropped.
"""

from __future__ import annotations

from typing import Any

import orjson

from pt2logs.readers.trace_state import TraceState, handles
from pt2logs.schema import TABLES, _coerce
from pt2logs.tables.core import CM_OWN

KINDS = ("compilation_metrics", "bwd_compilation_metrics", "compilation_metrics_runtime", "bwd_compilation_metrics_runtime")

_COLS = {c.name: c.kind for c in TABLES["compilation_metrics"].columns if c.name not in CM_OWN}


@handles(*KINDS)
def compilation_metrics(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    if not isinstance(meta, dict):
        st.error("bad_metadata", st.rec.line_no if st.rec else None, "compilation_metrics metadata is not an object", str(meta)[:200])
        return
    kind = next(k for k in env if k in KINDS)
    row: dict[str, Any] = {"kind": kind}
    extra: dict[str, Any] = {}
    for k, v in meta.items():
        ck = _COLS.get(k)
        if ck is None or k in ("run_id", "rank", "txn"):
            extra[k] = v
            continue
        c = _coerce(ck, v)
        if c is None and v is not None:
            extra[k] = v  # did not fit the column type: keep the value
        row[k] = c
    if row.get("compile_id") is None:
        row["compile_id"] = cid
    if extra:
        row["extra"] = orjson.dumps(extra, default=str).decode()
    start = meta.get("start_time")
    if isinstance(start, (int, float)) and start > 0:
        st.tb.observe(st.key, st.rec.tod_us, start * 1e6)
        row["ts"] = int(start * 1e6)
    st.add("compilation_metrics", row)
    v = meta.get("pytorch_version")
    if isinstance(v, str) and not st.stats.torch_version:
        st.stats.torch_version = v
    # handlers of derived tables (failures, restarts, ...) hook in here
    for hook in METRICS_HOOKS:
        hook(st, kind, meta, row.get("compile_id") or cid)


#: functions called with (state, kind, metadata, compile_id) for every metrics record
METRICS_HOOKS: list = []

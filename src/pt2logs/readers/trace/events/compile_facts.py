"""Recompiles, graph breaks, failures, guards and kernels from a trace.

Rows that need facts from later in the compile wait in the compile's scratch
space (a few per compile, so memory stays bounded) and leave when that compile's
``compilation_metrics`` record arrives (or at the end of the file):

* ``recompiles`` — from the ``recompile_reasons`` artifact (envelope = the NEW
  compile); logs with no such artifact (older torch) use ``compilation_metrics.recompile_reason``.
  A compile refused by the recompile limit (metrics ``fail_reason`` "recompile
  limit exceeded" / cache_size_limit) is a row with cause ``recompile_limit_hit``.
* ``graph_breaks`` — from ``dynamo_graph_break_reason`` artifacts; a compile's
  ``restart_reasons`` add rows only for breaks no artifact reported (older torch),
  and repeats of one site in one compile are folded into ``occurrences``.
* ``failures`` — a metrics record with ``fail_type``, and one row per restart reason.
* ``guards`` — ``dynamo_cpp_guards_str`` text, guard counts, ``create_symbol`` symbols.
* ``kernels`` / ``extern_calls`` — from ``inductor_output_code``; ``cache_hit``
  comes from the ``fx_graph_cache_*`` artifact torch writes right after it (caches.py calls
  :func:`emit_code`).
"""

from __future__ import annotations

from typing import Any

from pt2logs.analysis import failures as failure_id
from pt2logs.analysis.graph_breaks import parse_graph_break
from pt2logs.analysis.guard_text import count_guards, guard_lines
from pt2logs.analysis.guards import split_recompile_reasons
from pt2logs.analysis.output_code import parse_output_code
from pt2logs.readers.compile_rows import break_site, graph_break_row, kernel_rows, recompile_columns
from pt2logs.readers.trace.events.basics import resolve
from pt2logs.readers.trace.state import TraceState

#: torch's restart reason when a speculation failed without a reason (symbolic_convert.SpeculationEntry):
#: a restart of the analysis, kept in failures (is_restart), not a graph-break site
RESTART_PLACEHOLDER = "Unknown fail_and_restart_analysis"
_LIMIT_MARKERS = ("recompile limit", "recompile_limit", "cache_size_limit", "cache size limit")


def _base(st: TraceState, cid: str | None) -> dict[str, Any]:
    """Where a row of the compile ``cid`` is seen (:meth:`TraceState.where`: kept for the rows that wait
    for the compile's metrics), with the frame being compiled."""
    name, filename, line = st.frame(cid)
    return st.where(cid) | {"co_name": name, "co_filename": filename, "co_firstlineno": line}


# ---------------------------------------------------------------- recompiles


def _recompile_row(
    st: TraceState, cid: str | None, reasons: list[tuple[str | None, str]]
) -> dict[str, Any]:
    return _base(st, cid) | recompile_columns(reasons)


def recompile_reasons(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    reasons = split_recompile_reasons(st.text())
    sc = st.scratch(cid)
    sc["recompile"] = _recompile_row(st, cid, reasons)
    st.scratch(None)["recompile_artifacts"] = True


# ---------------------------------------------------------------- graph breaks


def graph_break(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    gb = parse_graph_break(st.text())
    breaks: dict = st.scratch(cid).setdefault("gb", {})
    key = break_site(gb)
    if key in breaks:
        breaks[key]["occurrences"] += 1
        return
    breaks[key] = graph_break_row(_base(st, cid), gb, "graph_break_artifact")


# ---------------------------------------------------------------- guards


def cpp_guards(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    sc = st.scratch(cid)
    sc["guards"] = st.text()
    sc["guards_line"] = st.rec.line_no


def create_symbol(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    if isinstance(meta, dict):
        sc = st.scratch(cid)
        sc.setdefault("symbols", []).append(str(meta.get("symbol")))
        sc.setdefault("sources", []).append(
            None if meta.get("source") is None else str(meta.get("source"))
        )


# ---------------------------------------------------------------- kernels


def output_code(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    st.scratch(cid).setdefault("code", []).append(
        kernel_rows(st.where(cid), parse_output_code(st.text()))
    )


def emit_code(st: TraceState, sc: dict[str, Any], cache_hit: bool | None) -> None:
    for rows, externs in sc.pop("code", []):
        for r in rows:
            st.add("kernels", dict(r, cache_hit=cache_hit))
        for r in externs:
            st.add("extern_calls", dict(r, cache_hit=cache_hit))


# ---------------------------------------------------------------- end of a compile


def on_metrics(st: TraceState, kind: str, meta: dict[str, Any], cid: str | None) -> None:
    sc = st.scratch(cid)
    if cid is not None and meta.get("co_name"):
        # the metrics name the compiled frame exactly (dynamo_start's stack only gives the current line)
        st.frames[cid] = (meta.get("co_name"), meta.get("co_filename"), meta.get("co_firstlineno"))
    fail_type = meta.get("fail_type")
    fail_reason = meta.get("fail_reason")
    base = _base(st, cid)
    if fail_type or fail_reason:
        fn = meta.get("fail_user_frame_filename")
        st.add(
            "failures",
            dict(
                base,
                fail_type=fail_type,
                fail_reason=fail_reason,
                user_filename=resolve(st, fn),
                user_lineno=meta.get("fail_user_frame_lineno"),
                is_restart=False,
                **failure_id.from_metrics(meta, resolve(st, fn)),
            ),
        )
    restarts = meta.get("restart_reasons") or []
    for r in restarts if isinstance(restarts, (list, tuple)) else [restarts]:
        st.add(
            "failures",
            dict(
                base,
                fail_type=None,
                fail_reason=str(r),
                user_filename=None,
                user_lineno=None,
                is_restart=True,
                **failure_id.restart_columns(str(r)),
            ),
        )
    if kind != "compilation_metrics":
        emit_code(st, sc, None)
        return
    limit_hit = bool(fail_reason) and any(m in str(fail_reason).lower() for m in _LIMIT_MARKERS)
    rec = sc.pop("recompile", None)
    if (
        rec is None
        and meta.get("recompile_reason")
        and not st.scratch(None).get("recompile_artifacts")
    ):
        # logs older than the recompile_reasons artifact only have this field
        rec = _recompile_row(st, cid, split_recompile_reasons(str(meta["recompile_reason"])))
    if rec is None and limit_hit:
        rec = _recompile_row(st, cid, [])
    if rec is not None:
        if limit_hit:
            rec.update(cause="recompile_limit_hit", is_limit_hit=True)
        _fill_frame(rec, meta, st, cid)
        if rec.get("co_name") is None and rec.get("prev_compile_id"):
            # a compile refused by the recompile limit has no frame of its own: it is the earlier one's
            rec["co_name"], rec["co_filename"], rec["co_firstlineno"] = st.frame(
                rec["prev_compile_id"]
            )
        st.add("recompiles", rec)
    breaks: dict = sc.pop("gb", {})
    if breaks:
        st.scratch(None)["gb_artifacts"] = True
    # restart reasons stand in for graph breaks only in logs older than the graph-break artifact
    old_format = not st.scratch(None).get("gb_artifacts")
    for r in restarts if old_format and isinstance(restarts, (list, tuple)) else []:
        if (str(r).startswith("<class ") and "Restart" in str(r)) or str(r).startswith(
            RESTART_PLACEHOLDER
        ):
            continue  # a restart of the analysis that is not a graph break (e.g. tensorify, a speculation placeholder)
        gb = parse_graph_break(str(r))
        key = break_site(gb)
        if key not in breaks:
            breaks[key] = graph_break_row(_base(st, cid), gb, "restart_reason")
    for row in breaks.values():
        _fill_frame(row, meta, st, cid)
        st.add("graph_breaks", row)
    _emit_guards(st, sc, cid, meta)
    emit_code(st, sc, None)


def _fill_frame(row: dict[str, Any], meta: dict[str, Any], st: TraceState, cid: str | None) -> None:
    name, filename, line = st.frame(cid)
    row["co_name"] = meta.get("co_name") or row.get("co_name") or name
    row["co_filename"] = meta.get("co_filename") or row.get("co_filename") or filename
    row["co_firstlineno"] = meta.get("co_firstlineno") or row.get("co_firstlineno") or line


def _emit_guards(
    st: TraceState, sc: dict[str, Any], cid: str | None, meta: dict[str, Any] | None
) -> None:
    text = sc.pop("guards", None)
    line = sc.pop("guards_line", None)
    symbols = sc.pop("symbols", [])
    sources = sc.pop("sources", [])
    count = meta.get("guard_count") if meta else None
    if text is None and count is None and not symbols:
        return
    st.add(
        "guards",
        {
            **st.where(cid),
            "line_no": line,
            "guard_count": count if count is not None else (count_guards(text) if text else None),
            "guards": text,
            "n_guard_lines": guard_lines(text) if text else None,
            "dynamic_symbols": symbols,
            "symbol_sources": sources,
        },
    )


def finish(st: TraceState) -> None:
    """End of file: compiles whose metrics never came (a cut log) still get their rows."""
    for cid, sc in list(st.compiles.items()):
        key = cid or None
        rec = sc.pop("recompile", None)
        if rec is not None:
            st.add("recompiles", rec)
        for row in sc.pop("gb", {}).values():
            st.add("graph_breaks", row)
        _emit_guards(st, sc, key, None)
        emit_code(st, sc, None)

"""Rows that several readers make, each kind built in one place.

* ``graph_breaks``: from a trace's ``dynamo_graph_break_reason`` artifact or (older torch) a compile's
  restart reasons (:mod:`pt2logs.readers.trace.events.compile_facts`), and from a TORCH_LOGS
  ``[__graph_breaks]`` message (:mod:`pt2logs.readers.lines.log_messages`): :func:`graph_break_row`;
  repeats of one break in one compile fold on :func:`break_site` into ``occurrences``.
* ``kernels`` / ``extern_calls``: from a generated module (a trace's ``inductor_output_code``, a
  TORCH_LOGS ``[__output_code]`` message, a TORCH_COMPILE_DEBUG ``output_code.py``): :func:`kernel_rows`.

``where`` is what the reader knows of where the row was seen (source, file, line, compile id, rank, time,
the compiled frame); a new column of these tables is filled here, once for every reader.
"""

from __future__ import annotations

from typing import Any

from pt2logs.analysis.guards import classify_guard
from pt2logs.analysis.output_code import OutputCode
from pt2logs.readers.identity_cols import break_frames

#: the columns of a parsed graph break (:func:`pt2logs.analysis.graph_breaks.parse_graph_break`) a row keeps
BREAK_COLUMNS = (
    "gb_id",
    "gb_type",
    "reason",
    "user_filename",
    "user_lineno",
    "explanation",
    "hints",
)


def break_site(gb: dict[str, Any]) -> tuple:
    """What makes two reports of a graph break in one compile the same break: its id (else its type) and
    its user line."""
    return (gb.get("gb_id") or gb.get("gb_type"), gb.get("user_filename"), gb.get("user_lineno"))


def recompile_columns(reasons: list[tuple[str | None, str]]) -> dict[str, Any]:
    """A ``recompiles`` row's columns from its failed guards, newest first (``(prev compile id, reason)``
    pairs): the first reason classified, every reason kept; the trace and TORCH_LOGS readers add where
    and what was recompiled."""
    prev, first = reasons[0] if reasons else (None, None)
    cause, subject = classify_guard(first) if first else ("other", None)
    return {
        "reason": first,
        "all_reasons": [r for _, r in reasons],
        "cause": cause,
        "guard_subject": subject,
        "prev_compile_id": prev,
        "is_limit_hit": False,
    }


def graph_break_row(
    where: dict[str, Any], gb: dict[str, Any], origin: str, frames: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A ``graph_breaks`` row: ``where``, the break's columns, its frame columns (``frames`` when the reader
    has them already, else from the break's stack), ``origin`` and one occurrence."""
    row = dict(where)
    row.update({k: gb.get(k) for k in BREAK_COLUMNS})
    row.update(break_frames(gb) if frames is None else frames, occurrences=1, origin=origin)
    return row


def kernel_rows(
    where: dict[str, Any],
    oc: OutputCode,
    graph: str | None = None,
    line_of: dict[str, int] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ``kernels`` and ``extern_calls`` rows of one generated module: ``where`` and the graph (``graph``,
    else the module's own) on each; ``line_of``: each kernel's line in the module, when the rows point
    into it (extern calls then have no line)."""
    g = oc.graph if graph is None else graph
    kernels = [
        dict(
            where,
            kernel_name=k.kernel_name,
            backend=k.backend,
            kind=k.kind,
            fused_ops=list(k.fused_ops),
            graph=g,
        )
        for k in oc.kernels
    ]
    externs = [dict(where, op=op, count=n, graph=g) for op, n in sorted(oc.extern_calls.items())]
    if line_of is not None:
        for r in kernels:
            r["line_no"] = line_of.get(r["kernel_name"])
        for r in externs:
            r["line_no"] = None
    return kernels, externs

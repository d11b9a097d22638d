"""Identity columns, filled in one place as rows of the compile tables are added (every reader).

The rules are :mod:`pt2logs.analysis.identity` (paths, frames, break keys),
:mod:`pt2logs.analysis.guard_parts` (a guard's kind, source and values) and
:mod:`pt2logs.analysis.failures`; this module applies them to a row about to be stored and tells the
file's statistics what the run's root and Python version need: the folders of its user code and the
Python version its paths show. A column the reader filled already is left alone.
"""

from __future__ import annotations

import re
from typing import Any

from pt2logs.analysis.guard_parts import guard_parts
from pt2logs.analysis.identity import (
    FramePick,
    break_key,
    classify_path,
    frame_text,
    parse_frame_text,
    pick_frames,
    user_dir,
)
from pt2logs.tables.compile import FRAME_ID_TABLES

#: tables with identity columns
TABLES = frozenset({"compilation_metrics", "recompiles", "graph_breaks", "failures"})
#: tables whose rows carry the integers of their compile id (the newer ones had them from their first version)
FRAME_TABLES = frozenset(FRAME_ID_TABLES) | {
    "cudagraph_skips",
    "kernel_provenance",
    "aot_compiles",
    "collective_schedule",
}
#: a compile id's last two parts, both numbers
_FRAME_IDS = re.compile(r"(?:^|/)(\d{1,9})/(\d{1,9})\Z", re.ASCII)
_GUARD = ("guard_kind", "guard_source", "guard_expected", "guard_actual")


def fill(table: str, row: dict[str, Any], stats: Any) -> None:
    """Add the identity columns of ``row`` (a row of ``table``) that are not there yet; ``stats``
    (a :class:`~pt2logs.readers.kit.ReadStats`) learns the user folders and Python version seen."""
    if table in FRAME_TABLES and "frame_id" not in row:
        row["frame_id"], row["frame_compile_id"] = frame_ids(row.get("compile_id"))
    if table not in TABLES:
        return
    co = row.get("co_filename")
    if co and row.get("co_file") is None:
        pid = classify_path(co)
        row["co_file"], row["co_file_kind"] = pid.key, pid.kind
        _note(stats, pid.kind, pid.key, pid.python)
    if table == "recompiles" and row.get("guard_kind") is None:
        if row.get("reason"):
            row.update(zip(_GUARD, guard_parts(row["reason"]), strict=True))
        elif row.get("is_limit_hit"):
            row["guard_kind"] = "recompile_limit"
    elif table == "graph_breaks" and row.get("break_key") is None:
        row["break_key"] = break_key(row.get("gb_id"), row.get("gb_type"))
    if row.get("frame_file"):
        _note(stats, "user", row["frame_file"], None)
    if stats.python_from_paths is None:
        for text in row.get("user_stack") or row.get("stack") or ():
            f = parse_frame_text(text)
            py = classify_path(f[0]).python if f else None
            if py:
                stats.python_from_paths = py
                break


def frame_ids(compile_id: str | None) -> tuple[int | None, int | None]:
    """F and C of a compile id in torch's text form (``F/C``, ``!A/F/C``; ``!A`` alone has neither; the
    attempt is never part of it: readers keep it apart): its last two parts when both are numbers (that fit
    the INTEGER columns: up to 9 digits). The one rule: SQL reads the stored integers, never the text
    (rows stored without them: :func:`frame_id_arrays`)."""
    m = _FRAME_IDS.search(compile_id) if compile_id else None
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def frame_id_arrays(compile_ids: Any, rule: Any = None) -> tuple[Any, Any]:
    """:func:`frame_ids` of a pyarrow array of compile ids (plain or dictionary-encoded text; chunked too), as
    two INTEGER arrays (chunked when the ids are): the rule applied once per distinct id. For rows stored
    without the columns: ``pt2logs compact`` writes them (pt2logs.store.frame_upgrade), pt2logs' reads of
    files not rewritten yet call it in DuckDB (pt2logs.query.frame_fill). ``rule``: :func:`frame_ids` or a
    memo of it."""
    import pyarrow as pa

    if isinstance(compile_ids, pa.ChunkedArray):
        pairs = [frame_id_arrays(c, rule) for c in compile_ids.chunks]
        return (
            pa.chunked_array([f for f, _ in pairs], pa.int32()),
            pa.chunked_array([c for _, c in pairs], pa.int32()),
        )
    d = compile_ids if pa.types.is_dictionary(compile_ids.type) else compile_ids.dictionary_encode()
    found = list(map(rule or frame_ids, d.dictionary.to_pylist()))
    f = pa.array([p[0] for p in found], pa.int32())
    c = pa.array([p[1] for p in found], pa.int32())
    return f.take(d.indices), c.take(d.indices)


def _note(stats: Any, kind: str | None, key: str | None, python: str | None) -> None:
    if kind == "user" and key:
        d = user_dir(key)
        if d:
            stats.note_user_dir(d)
    if python and stats.python_from_paths is None:
        stats.python_from_paths = python


def break_frames(gb: dict[str, Any]) -> dict[str, Any]:
    """The frame columns of a parsed graph break (:func:`pt2logs.analysis.graph_breaks.
    parse_graph_break`): its user frame, its library frame, its stack as text."""
    frames = gb.get("frames") or []
    pick = pick_frames(frames, (gb.get("user_filename"), gb.get("user_lineno")))
    return frame_columns(pick) | {"user_stack": [frame_text(f) for f in frames]}


def frame_columns(pick: FramePick) -> dict[str, Any]:
    return {
        "frame_file": pick.frame_file,
        "frame_line": pick.frame_line,
        "frame_func": pick.frame_func,
        "lib_file": pick.lib_file,
        "lib_func": pick.lib_func,
        "lib_line": pick.lib_line,
    }

"""Files written before ``frame_id`` / ``frame_compile_id``: found, and filled as ``pt2logs compact`` copies them.

The frame tables (tables.compile.FRAME_ID_TABLES) store a compile id's integers in every row since schema v3;
a file of v2 lacks the columns. :func:`lacking` names such files among a snapshot's (a file recorded with the
current schema has them: only the others' footers are read); ``compact`` rewrites every partition that holds
one, as any compaction (a transaction: new files, the commit, the replaced files to ``_gc``; killed anywhere,
recovery keeps or rolls back the whole), and :func:`filled` fills each copied row group's NULL integers with
readers.identity_cols.frame_ids, the one rule (a row group at a time: memory stays the copy's). ``pt2logs check``
lists what is left to upgrade. Until then pt2logs' own reads fill them too (pt2logs.query.frame_fill).

An ingest does not rewrite them: its commit writes its own runs' files only (under the lock for a moment); a
rewrite of older partitions costs what those partitions hold, and is compaction's job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc
import pyarrow.parquet as pq

from pt2logs.tables.compile import FRAME_ID_TABLES

if TYPE_CHECKING:
    from pt2logs.store.parts import Layout
    from pt2logs.store.snapshot import Snapshot

COLUMNS = ("frame_id", "frame_compile_id")
#: what a command says of such files (pt2logs check)
HOW = (
    "`pt2logs compact -w {wh}` rewrites them with the columns; until then pt2logs' own reads fill them "
    "from the compile id, and the DuckDB CLI's views (pt2logs.duckdb) read NULL there"
)


def lacking(lay: Layout, snap: Snapshot) -> list[str]:
    """The files of ``snap`` (rel paths) of the frame tables written without the columns: those of a table not
    every file of which was recorded with the current schema, whose footer lacks ``frame_id``."""
    out = []
    for table in FRAME_ID_TABLES:
        if snap.complete.get(table):
            continue
        for rel in snap.files.get(table, ()):
            try:
                with lay.fs.open(lay.path(*rel.split("/")), "rb") as f:
                    names = pq.read_schema(f).names
            except (
                OSError,
                ValueError,
            ):  # damaged: `pt2logs check` says so, compact leaves its partition
                continue
            if COLUMNS[0] not in names:
                out.append(rel)
    return out


def filled(table: str, rows: Any) -> Any:
    """``rows`` (a pyarrow Table of ``table``'s declared columns, texts plain or dictionary-encoded) with the
    NULL integers of its compile ids filled by the one rule (a row that has them keeps them)."""
    if table not in FRAME_ID_TABLES or rows.num_rows == 0:
        return rows
    from pt2logs.readers.identity_cols import frame_id_arrays

    cols = [rows.column(c) for c in COLUMNS]
    if not any(c.null_count for c in cols):
        return rows
    rule = frame_id_arrays(rows.column("compile_id"))
    for name, have, fill in zip(COLUMNS, cols, rule, strict=True):
        i = rows.schema.get_field_index(name)
        rows = rows.set_column(i, rows.schema.field(i), pc.coalesce(have, fill).cast(have.type))
    return rows

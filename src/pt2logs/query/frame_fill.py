"""A compile id's integers for rows stored without them, on pt2logs' own connections: the Python rule, not SQL.

``frame_id`` / ``frame_compile_id`` are stored in every row of the frame tables (tables.compile.FRAME_ID_TABLES)
since those columns exist; a file written before them (schema v2 of those tables) lacks them until
``pt2logs compact`` rewrites it (pt2logs.store.frame_upgrade). Until then the views of a snapshot that may hold
such a file fill the NULL ones with :data:`FUNCTION`, a DuckDB function in Python (arrow, vectorized) that
applies readers.identity_cols.frame_ids, the one rule, once per distinct compile id of a batch: no SQL ever
parses a compile id. A snapshot whose files of a table were all recorded with the current schema
(Snapshot.complete) reads the stored columns alone, without the function.

Every connection whose views read a snapshot registers it (:func:`register`: views.create_views, which
pt2logs.connect, serve and the fleet's connections go through; the kept cache's connection). The views file
``pt2logs.duckdb`` (the DuckDB CLI: it cannot call Python) reads the stored columns: NULL in a file not
upgraded yet (``pt2logs check`` names such files).
"""

from __future__ import annotations

import functools
import weakref
from typing import TYPE_CHECKING, Any

from pt2logs.tables.compile import FRAME_ID_TABLES

if TYPE_CHECKING:
    import duckdb

    from pt2logs.store.snapshot import Snapshot

#: the DuckDB function: compile_id (VARCHAR) -> STRUCT(frame_id INTEGER, frame_compile_id INTEGER)
FUNCTION = "pt2logs_frame_ids"
COLUMNS = ("frame_id", "frame_compile_id")

#: distinct compile ids whose answer is kept between calls
MEMO = 1 << 16
_rule: Any = None
_REGISTERED: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()


def needed(snap: Snapshot, table: str) -> bool:
    """``table``'s views in ``snap`` may read a file without the columns (not every file recorded with the
    current schema)."""
    return table in FRAME_ID_TABLES and bool(snap.files.get(table)) and not snap.complete.get(table)


def register(con: duckdb.DuckDBPyConnection, snap: Snapshot) -> None:
    """Give ``con`` :data:`FUNCTION` when ``snap``'s views call it (once per connection)."""
    if con in _REGISTERED or not any(needed(snap, t) for t in FRAME_ID_TABLES):
        return
    import duckdb

    ty = duckdb.struct_type({c: duckdb.sqltype("INTEGER") for c in COLUMNS})
    con.create_function(
        FUNCTION,
        _frame_ids,
        [duckdb.sqltype("VARCHAR")],
        ty,
        type="arrow",
        null_handling="special",
        side_effects=False,
    )
    _REGISTERED.add(con)


def _frame_ids(compile_ids: Any) -> Any:
    """The function DuckDB calls, a vector of compile ids at a time (the same ids come again and again: the
    rule's answers kept, a bounded memo)."""
    import pyarrow as pa

    from pt2logs.readers.identity_cols import frame_id_arrays

    global _rule
    if _rule is None:
        from pt2logs.readers.identity_cols import frame_ids

        _rule = functools.lru_cache(maxsize=MEMO)(frame_ids)
    if isinstance(compile_ids, pa.ChunkedArray):
        compile_ids = compile_ids.combine_chunks()
    f, c = frame_id_arrays(compile_ids, _rule)
    return pa.StructArray.from_arrays([f, c], names=list(COLUMNS))


def select_items(alias: str = "t") -> list[str]:
    """The views' ``REPLACE`` items: each stored integer, else the rule's from the row's compile id."""
    return [f"coalesce({alias}.{c}, {FUNCTION}({alias}.compile_id).{c}) AS {c}" for c in COLUMNS]

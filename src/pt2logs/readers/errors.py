"""What every reader shares: the batch type, the excerpt limit, and the one way to record a bad input.

Each reader keeps its own ``ingest_errors`` rows (:class:`~pt2logs.schema.Rows`) and calls
:func:`add_error`, which counts the problem in the file's stats and adds the row.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from pt2logs.schema import Rows

#: what a reader yields: (table name, record batch)
Batch = tuple[str, pa.RecordBatch]
#: the longest excerpt of bad input kept in ``ingest_errors``
EXCERPT = 1024


def add_error(rows: Rows, ctx: Any, kind: str, line_no: int | None, message: str,
              excerpt: bytes | str = b"", severity: str = "error", rank: int | None = None) -> None:
    """Count one bad piece of input in ``ctx.stats`` and add its ``ingest_errors`` row to ``rows``."""
    if severity == "warning":
        ctx.stats.warnings += 1
    else:
        ctx.stats.errors += 1
    if isinstance(excerpt, bytes):
        excerpt = excerpt[:EXCERPT].decode("utf-8", "replace")
    rows.add({"rank": ctx.rank if rank is None else rank, "path": ctx.path or ctx.file, "line_no": line_no,
              "kind": kind, "severity": severity, "message": message, "excerpt": excerpt[:EXCERPT]})

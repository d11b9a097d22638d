"""Warehouses rewritten by tests: as an older pt2logs wrote them (runs files without commit records; the
compile tables without frame_id / frame_compile_id), or with transactions moved to another day's partition (their records written anew); docs/warehouse.md."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from pt2logs.store.manifest import KEY


def without_records(wh: Path) -> None:
    """Drop the ``pt2logs.files`` commit record of every runs file (its transactions read as listed)."""
    for f in Path(wh).glob("runs/*/*.parquet"):
        t = pq.read_table(f, partitioning=None)
        meta = {k: v for k, v in (t.schema.metadata or {}).items() if k != KEY}
        pq.write_table(t.replace_schema_metadata(meta), f)


def rerecord(wh: Path) -> None:
    """Write every runs file's commit record anew from the files there now (a test that moves a
    transaction's files to another day's partition: as if it had been written that day)."""
    from pt2logs.store.manifest import make_record, with_record
    from pt2logs.store.parts import Layout, txn_of

    lay = Layout(str(wh))
    for f in Path(wh).glob("runs/*/*.parquet"):
        t = pq.read_table(f, partitioning=None)
        day = f.parent.name.split("=", 1)[1]
        pq.write_table(with_record(t, make_record(lay, txn_of(f.name) or "", day)), f)


def without_frame_ids(wh: Path) -> None:
    """Rewrite the frame tables' files as pt2logs wrote them before ``frame_id`` / ``frame_compile_id`` (schema
    v2, none of them); the commit records dropped (the files changed: their transactions read as listed)."""
    from pt2logs.tables.compile import FRAME_ID_TABLES

    for table in FRAME_ID_TABLES:
        for f in (Path(wh) / table).rglob("*.parquet"):
            t = pq.read_table(f, partitioning=None)
            meta = dict(t.schema.metadata or {}) | {b"pt2logs.schema_version": b"2"}
            t = t.drop_columns(["frame_id", "frame_compile_id"]).replace_schema_metadata(meta)
            pq.write_table(t, f)
    without_records(wh)

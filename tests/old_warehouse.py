"""Warehouses rewritten by tests: as an older pt2logs wrote them (runs files without commit records),
or with transactions moved to another day's partition (their records written anew); docs/warehouse.md."""

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

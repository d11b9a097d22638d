"""A snapshot of an object-store warehouse lists it in a few requests, whatever the number of tables
(docs/warehouse.md, "Commit records"): the ``_`` folders, ``runs/``, then the whole warehouse, each one
recursive listing; no HEAD or listing per table folder (~35 of them: 76 requests before). Counted on a
real S3-compatible server (moto), whose request log says what the store was asked."""

from __future__ import annotations

import s3fs
from tests.conftest import SAMPLES
from tests.s3server import moto_s3

import pt2logs
from pt2logs.query import kept_rows
from pt2logs.query.views import arrow_table
from pt2logs.store import snapshot
from pt2logs.store.parts import Layout, stored_tables

LOG: list[tuple[str, str]] = []


def _asked() -> tuple[int, int]:
    """(listings, HEADs) in the log since it was last cleared."""
    lists = sum(1 for m, q in LOG if m == "GET" and "list-type=" in q)
    return lists, sum(1 for m, _ in LOG if m == "HEAD")


def test_a_snapshot_lists_an_s3_warehouse_in_three_requests_and_sees_every_file():
    with moto_s3(log=LOG) as fs:
        fs.mkdir("snap-list")
        wh = "s3://snap-list/wh/"
        pt2logs.ingest([str(SAMPLES / "recompiles"), str(SAMPLES / "graph_breaks")], wh)
        lay = Layout(wh)
        LOG.clear()
        snap = snapshot.take(lay)
        assert _asked() == (3, 0), LOG  # was 56 listings and 20 HEADs
        assert len(LOG) == 3
        # the same files as one listing per table folder: every Parquet file written, nothing damaged
        other = s3fs.S3FileSystem(skip_instance_cache=True)
        for table in stored_tables():
            want = sorted(lay.rel(p) for p in other.find(lay.path(table)) if p.endswith(".parquet"))
            assert snap.files[table] == want, table
        assert snap.files["graph_breaks"] and not snap.damaged
        # the whole-warehouse listing is not kept for what lies outside the table folders: a file another
        # process writes there after the snapshot (the lock, a compaction's record) is seen
        for late in (("_lock",), ("_gc", "late.json")):
            other.pipe(lay.path(*late), b"{}")
            assert lay.fs.exists(lay.path(*late)), late
            other.rm(lay.path(*late))
        # a connection and its query: the snapshot's listings, the kept rows' folders, no HEAD per file
        LOG.clear()
        con = pt2logs.connect(wh)
        assert arrow_table(con, "SELECT count(*) AS n FROM runs").column(0)[0].as_py() == 2
        con.close()
        lists, heads = _asked()
        # the snapshot's three, one per kind of kept rows (query/kept_rows.py KINDS)
        assert lists <= 3 + len(kept_rows.KINDS) and heads <= 2, LOG  # was 58 listings and 21 HEADs

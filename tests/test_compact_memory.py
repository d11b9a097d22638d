"""`compact` memory is bounded by its batches, not the partition: a partition of 400 synthesized runs
(bench/fleet.py: real sample runs replicated, 1.75 MB of event payload text each) is rewritten in a
subprocess whose peak RSS is measured (bench/measure.py). Before, the copy read 250,000-row batches
(every long text of the partition at once: at 10,000 runs past DuckDB's 2 GiB string buffer, 3.2 GB)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from bench.fleet import synthesize
from bench.measure import run
from tests.conftest import SAMPLES

import pt2logs

ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(
        [str(Path(pt2logs.__file__).resolve().parent.parent)]
        + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    ),
}


def _counts(wh: Path) -> list:
    con = pt2logs.connect(str(wh))
    return [
        con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for t in ("runs", "events", "log_lines", "guards")
    ] + [con.execute("SELECT sum(length(payload)) FROM events").fetchone()[0]]


def test_compact_of_a_fleet_partition_stays_within_its_batches(tmp_path):
    wh = synthesize(tmp_path, 400)
    # the synthesized files as one committed transaction's (compact copies committed files only)
    txn = pt2logs.connect(str(wh)).execute("SELECT any_value(txn) FROM runs").fetchone()[0]
    for f in wh.glob("*/ingest_date=*/part-bench-*.parquet"):
        f.rename(f.with_name(f"part-{txn}-{f.stem[len('part-bench-') :]}-1.parquet"))
    pt2logs.ingest(
        [str(SAMPLES)], str(wh), force=True
    )  # a second file per table: the partition is compacted
    before = _counts(wh)
    m = run([sys.executable, "-m", "pt2logs", "compact", "-w", str(wh)], env=ENV)
    assert m.rc == 0, m.out[-2000:]
    assert _counts(wh) == before
    print(f"compact peak RSS {m.peak_rss_mb:.0f} MB, {m.wall_s:.1f} s")
    assert m.peak_rss_mb < 450, m.peak_rss_mb


def test_compact_batches_of_wide_rows_are_bounded_by_bytes(tmp_path):
    """A compilation_metrics row holds its configs (~30 KiB decoded): 8,192 of them a batch took 580 MB, a
    2,000-run compaction's peak (641 MB; bench/RESULTS.md). The copy's batches are sized by bytes, their
    texts decoded a batch at a time."""
    from pt2logs.store import compact_copy
    from pt2logs.store.compact import compact
    from pt2logs.store.parts import file_schema

    wh = tmp_path / "wh"
    pt2logs.ingest([str(SAMPLES)], str(wh))
    pt2logs.ingest([str(SAMPLES)], str(wh), force=True)  # a second file per table
    files = sorted(str(f) for f in wh.glob("compilation_metrics/*/*.parquet"))
    assert len(files) >= 2
    schema = file_schema("compilation_metrics")
    from pt2logs.query.views import arrow_table

    live = compact_copy.live_runs(
        arrow_table(pt2logs.connect(str(wh)), "SELECT run_id, txn FROM _live")
    )
    batches = list(
        compact_copy.copy_table(
            None, files, False, live, schema, lambda t: compact_copy.to_flight(t, schema, {})
        )
    )
    assert sum(b.num_rows for b in batches) > 0
    assert max(b.nbytes for b in batches) <= 2 * compact_copy.OUT_BYTES
    before = _counts(wh)
    configs = "SELECT sum(length(inductor_config)), count(*) FROM compilation_metrics"
    cm = pt2logs.connect(str(wh)).execute(configs).fetchone()
    assert compact(str(wh)).partitions
    assert _counts(wh) == before
    assert pt2logs.connect(str(wh)).execute(configs).fetchone() == cm


def test_a_compaction_writes_row_groups_of_many_wide_rows(tmp_path, monkeypatch):
    """A compaction's row groups are not an ingest's: 8 MB of decoded rows is ~250 compilation_metrics rows (~35 KB
    each: the configs), ~380 row groups at 10,000 runs whose 4.4 MB footer DuckDB parses at every read of one run
    (96 CPU ms against 21 with 2,048 rows a group; bench/RESULTS.md). They hold COMPACT_ROW_GROUP_ROWS rows, or
    COMPACT_ROW_GROUP_BYTES first; the payload store's keep the ingest's bound (its texts are read by row number).
    Real runs (bench/realfleet.py's copies of the samples) in two commits; the ingest's bound made 1 MB here (~30
    of these rows) so that 24 runs show it."""
    import pyarrow.parquet as pq
    from bench.realfleet import make_fleet

    from pt2logs.store import parts
    from pt2logs.store.compact import compact

    runs = sorted(p for p in make_fleet(tmp_path, 24).iterdir() if p.is_dir())
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(p) for p in runs[:12]], wh)
    pt2logs.ingest([str(p) for p in runs[12:]], wh)
    con = pt2logs.connect(wh)
    configs = "SELECT sum(length(inductor_config)), count(*) FROM compilation_metrics"
    before, cm = _counts(Path(wh)), con.execute(configs).fetchone()
    monkeypatch.setattr(parts, "ROW_GROUP_BYTES", 1 << 20)
    assert compact(wh, grace_s=0).partitions
    assert _counts(Path(wh)) == before
    assert pt2logs.connect(wh).execute(configs).fetchone() == cm
    (one,) = Path(wh).glob("compilation_metrics/*/*.parquet")
    meta = pq.ParquetFile(one).metadata
    assert (
        meta.num_rows == cm[1] and cm[0] > 2 * parts.ROW_GROUP_BYTES
    )  # (more than two of the ingest's groups)
    assert meta.num_row_groups == 1, [
        meta.row_group(i).num_rows for i in range(meta.num_row_groups)
    ]
    (store,) = Path(wh).glob("payloads/*/*.parquet")
    assert pq.ParquetFile(store).metadata.num_row_groups > 1

"""A large trace parsed in pieces (several processes) gives exactly the rows of a serial parse."""

from __future__ import annotations

import pytest
from tests.conftest import fixture_path, tables_rows

import pt2logs
from pt2logs.ingestion.engines import Engine
from pt2logs.tables.schema import TABLES


class InProcessPieces(Engine):
    """Runs every piece here, one after the other, but asks for pieces as a 3-job engine would."""

    jobs = 3


@pytest.fixture
def big_trace(tmp_path):
    srcs = sorted(fixture_path("gpu").glob("*/trace/*.log"))
    d = tmp_path / "job"
    d.mkdir()
    p = d / "dedicated_log_torch_trace_big.log"
    p.write_bytes(b"".join(s.read_bytes() for s in srcs) * 2)
    return d


def test_pieces_equal_serial(big_trace, tmp_path, monkeypatch):
    from pt2logs.ingestion import split

    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 0)
    path = next(big_trace.iterdir())
    points = split.split_points(str(path), 3)
    assert len(points) == 3, points
    data = path.read_bytes()
    for p in points[1:]:  # each piece starts on a header line that opens a compile's `dynamo` span
        assert data[p - 1 : p] == b"\n" and b'"chromium_event"' in data[p : data.index(b"\n", p)]
    serial, pieces = str(tmp_path / "serial"), str(tmp_path / "pieces")
    pt2logs.ingest([str(big_trace)], serial)
    pt2logs.ingest([str(big_trace)], pieces, engine=InProcessPieces())
    drop = ("txn", "ingest_date", "ingested_at", "committed_at", "content_hash")
    got, want = (
        tables_rows(pieces, dict.fromkeys(TABLES, drop)),
        tables_rows(serial, dict.fromkeys(TABLES, drop)),
    )
    for t in TABLES:  # one connection per warehouse, not two per table
        assert got[t] == want[t], t
    con = pt2logs.connect(pieces)
    (h,) = con.execute("SELECT content_hash FROM files").fetchone()
    assert h.startswith("pieces3:")


def test_piece_start_state(big_trace):
    from pt2logs.ingestion.split import piece_start

    path = next(big_trace.iterdir())
    data = path.read_bytes()
    off = data.index(b"\nV", len(data) // 2) + 1
    ps = piece_start(str(path), off)
    assert ps.first_line == data[:off].count(b"\n") + 1
    assert ps.strings and all(
        isinstance(k, int) and isinstance(v, str) and v for k, v in ps.strings.items()
    )
    assert ps.flags == {"gb_artifacts": True, "recompile_artifacts": True}


def test_prefix_blocks_are_whole_lines_and_lose_nothing(monkeypatch, tmp_path):
    from pt2logs.ingestion import split

    monkeypatch.setattr(
        split, "BLOCK", 16
    )  # tiny blocks: lines longer than a block, lines across blocks
    data = b"ab\nc" + b"x" * 100 + b"\nshort\n\n" + b"y" * 40 + b"\nlast"
    p = tmp_path / "f"
    p.write_bytes(data)
    for start, end in ((0, len(data)), (3, len(data) - 2), (5, 6), (len(data), len(data))):
        with open(p, "rb", buffering=0) as f:
            blocks = [bytes(b[:n]) for b, n in split._blocks(f, start, end)]
        assert b"".join(blocks) == data[start:end]
        assert all(b.endswith(b"\n") for b in blocks[:-1])
        assert sum(split._count_newlines(bytearray(b), len(b)) for b in blocks) == data[
            start:end
        ].count(b"\n")


@pytest.mark.parametrize("pieces", [2, 3, 8])
def test_split_targets_even_out_the_prefix_scans(pieces):
    from pt2logs.ingestion.split import _targets

    size, cost = 10_000_000, 0.08
    starts = [0, *_targets(size, pieces, cost)]
    ends = starts[1:] + [size]
    work = [
        (b - a) + cost * a for a, b in zip(starts, ends)
    ]  # parse the piece + scan the bytes before it
    assert starts == sorted(starts) and len(starts) == pieces
    assert max(work) - min(work) < size * 1e-6
    assert ends[0] > size / pieces  # the first piece (no prefix to scan) is the longest

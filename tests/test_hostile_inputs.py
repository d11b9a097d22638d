"""Hostile inputs on the readers' side (issue 31, items 1, 2, 4, 5): documents and lines built to blow
up stay bounded, blank lines cost nothing per line, undecodable compressed files are errors (never
"empty file"), a file name that is not UTF-8 reads the same on both trace paths."""

from __future__ import annotations

import os
import shutil

import pytest
from tests.conftest import ROOT

import pt2logs

SAMPLE_TRACE = ROOT / "sample_traces" / "recompiles" / "trace"


def _rows(wh: str, sql: str) -> list[tuple]:
    con = pt2logs.connect(wh)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


# ----------------------------------------------------------------------------- item 5: non-UTF-8 names


@pytest.mark.skipif(os.name != "posix", reason="a file name of arbitrary bytes is a POSIX thing")
@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_a_trace_named_in_non_utf8_bytes_is_read_on_both_paths(tmp_path, monkeypatch, native):
    """Before: the native path lost the file (reader_failed: surrogates not allowed, from the file
    column); the Python path read it. Both now store the name with its bad bytes as \\xNN."""
    monkeypatch.setenv("PT2LOGS_NATIVE", "1" if native else "0")
    src = next(SAMPLE_TRACE.iterdir())
    d = tmp_path / "in"
    d.mkdir()
    shutil.copy(src, os.fsdecode(os.path.join(os.fsencode(d), b"rank\xff.log")))
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(d)], wh)
    assert _rows(wh, "SELECT kind FROM ingest_errors WHERE severity = 'error'") == []
    files = _rows(wh, "SELECT file, count(*) FROM events GROUP BY ALL")
    assert files == [("rank\\xff.log", files[0][1])] and files[0][1] > 1000
    ref = tmp_path / "ref"
    ref.mkdir()
    shutil.copy(src, ref / "rank.log")
    pt2logs.ingest([str(ref)], str(tmp_path / "refwh"))
    con, ref_con = pt2logs.connect(wh), pt2logs.connect(str(tmp_path / "refwh"))
    tables = [t for (t,) in con.execute("SELECT DISTINCT table_name FROM information_schema.columns WHERE column_name = 'file' "
                                        "AND table_name NOT IN ('files', 'ingest_errors')").fetchall()]
    assert "events" in tables
    for t in tables:  # every row of the file, as from a file with a plain name
        assert con.execute(f'SELECT count(*) FROM "{t}"').fetchone() == ref_con.execute(f'SELECT count(*) FROM "{t}"').fetchone(), t
    con.close()
    ref_con.close()


# ----------------------------------------------------------------------------- item 4: undecodable compressed files

LOGS_GZ = ROOT / "sample_traces" / "recompiles" / "torch_logs.txt.gz"


def _zstd_long31(data: bytes) -> bytes:
    """What ``zstd --long=31`` writes when it reads a pipe: a frame that names a 2 GiB window."""
    import io

    import zstandard

    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=31, enable_ldm=True)
    buf = io.BytesIO()
    with zstandard.ZstdCompressor(compression_params=params).stream_writer(buf, closefd=False) as w:
        w.write(data)
    return buf.getvalue()


def _ingest_cli(*args: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from pt2logs.cli import main

    r = CliRunner().invoke(main, ["ingest", *args])
    return r.exit_code, r.output


def test_a_zstd_written_with_long31_is_read(tmp_path):
    """Before: zstd's default window limit (128 MiB) refused the frame, the head decoded to nothing and
    the file was skipped as "empty file" (exit 0 under --strict). Now the window is allowed: the
    decoder's memory is the smaller of window and output, and the rows equal the .gz's."""
    import gzip

    import zstandard

    text = gzip.decompress(LOGS_GZ.read_bytes())
    blob = _zstd_long31(text)
    with pytest.raises(zstandard.ZstdError, match="too much memory"):
        zstandard.ZstdDecompressor().decompressobj().decompress(blob)  # what it was: undecodable by default
    for name, data in (("zst", blob), ("gz", LOGS_GZ.read_bytes())):
        d = tmp_path / name
        d.mkdir()
        (d / f"torch_logs.txt.{name}").write_bytes(data)
    code, out = _ingest_cli(str(tmp_path / "zst"), "--warehouse", str(tmp_path / "wz"), "--strict")
    assert code == 0 and "empty file" not in out, out
    pt2logs.ingest([str(tmp_path / "gz")], str(tmp_path / "wg"))
    sql = "SELECT line_no, n_lines, message FROM log_lines ORDER BY line_no"
    rows = _rows(str(tmp_path / "wz"), sql)
    assert len(rows) > 10 and rows == _rows(str(tmp_path / "wg"), sql)


def test_a_zstd_window_past_the_bound_reads_the_bound_then_says_how(tmp_path, monkeypatch):
    """A frame whose window is larger than MAX_ZSTD_WINDOW is read up to that much output (so memory
    stays bounded however large the content), then an error that names the window and the command
    that reads it. The bound is made small here: the rule is the same at 128 MiB."""
    from pt2logs import compressed
    from pt2logs.sources import ReadResult, filesystem, stream

    monkeypatch.setattr(compressed, "MAX_ZSTD_WINDOW", 256 << 10)
    data = b"".join(b"line %d of a log written with zstd --long=31\n" % i for i in range(40_000))
    p = tmp_path / "big.log.zst"
    p.write_bytes(_zstd_long31(data))
    rr = ReadResult()
    out = b"".join(stream(*filesystem(str(p)), rr))
    assert out == data[: 256 << 10]
    assert rr.error is not None and "needs a 2 GiB window" in rr.error and "zstd -d --long=31" in rr.error, rr.error


def _flip_early(gz: bytes) -> tuple[bytes, int]:
    """``gz`` with one bit flipped in its first deflate bytes, at the first place where that makes
    zlib fail before it gives any byte (which place depends only on the data, so this is deterministic)."""
    import zlib

    for at in range(10, 60):
        for bit in range(8):
            bad = bytearray(gz)
            bad[at] ^= 1 << bit
            d = zlib.decompressobj(31)
            try:
                out = d.decompress(bytes(bad))
            except zlib.error:
                return bytes(bad), at
            if not out:
                continue
    raise AssertionError("no early flip breaks this stream")


def test_a_gzip_with_a_bit_flipped_early_is_an_error_not_an_empty_file(tmp_path):
    """Before: skipped as "empty file", no error row, --strict exited 0."""
    bad, at = _flip_early(LOGS_GZ.read_bytes())
    d = tmp_path / "in"
    d.mkdir()
    (d / "torch_logs.txt.gz").write_bytes(bad)
    code, out = _ingest_cli(str(d), "--warehouse", str(tmp_path / "wh"), "--strict")
    assert code == 1, out
    assert "empty file" not in out
    assert "torch_logs.txt.gz: unreadable: gzip data does not decode (Error -3" in out, out
    assert "stored bytes read:" in out


def test_a_gzip_damaged_midway_keeps_the_rows_before_and_names_the_offset(tmp_path):
    """Fed 64 KiB at a time, zlib loses at most that much input's output at a fault, and the error
    places it (here a changed literal: zlib finds it at the member's check, after decoding the rest):
    before, the whole 4 MiB read went in one call and every row of it was lost."""
    import gzip
    import random

    rnd = random.Random(31)
    text = b"".join(b"line %d %032x\n" % (i, rnd.getrandbits(128)) for i in range(40_000))
    gz = bytearray(gzip.compress(text))
    at = len(gz) * 3 // 4
    gz[at] ^= 0x55
    d = tmp_path / "in"
    d.mkdir()
    (d / "stderr.txt.gz").write_bytes(bytes(gz))
    wh = str(tmp_path / "wh")
    res = pt2logs.ingest([str(d)], wh, fmt="job_stderr")
    assert res.errors >= 1
    (msg,) = [m for (m,) in _rows(wh, "SELECT message FROM ingest_errors WHERE kind = 'unreadable'")]
    import re

    where = int(re.search(r"gzip data does not decode at or before stored byte (\d+)", msg).group(1))
    assert at < where <= len(gz), (at, msg)
    kept = _rows(wh, "SELECT sum(n_lines) FROM log_lines")[0][0]
    assert kept and kept > 40_000 // 2, kept

"""Compressed input: read whole (members, padding), cut or trailed files reported, memory bounded.

Real traces, compressed here; bombs are written with streaming compressors so the test never holds
them in memory, and measured in a child process (its own peak RSS, a watchdog kills it past 1.5 GB).
"""

from __future__ import annotations

import bz2
import gzip
import os
import re
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest
from tests.conftest import ROOT, fixture_path

import pt2logs
from pt2logs.tables.schema import TABLES


def content_tables() -> list[str]:
    """Tables whose rows come from the content (not from the file's bytes on disk)."""
    import pt2logs.tables  # noqa: F401 - declares them

    return sorted(set(TABLES) - {"files", "runs", "ingest_errors"})


#: the memory bound of the reliability issue, for any input
MAX_RSS_MB = 300


@pytest.fixture(scope="module")
def trace() -> bytes:
    return fixture_path("tlparse", "cache_hit_miss.log").read_bytes()


def ingest_one(tmp_path: Path, name: str, data: bytes) -> tuple[str, dict[str, int], list[tuple]]:
    """Ingest ``data`` as ``<name>/job/trace.log``: the warehouse, its row counts, its ingest_errors."""
    d = tmp_path / name / "job"
    d.mkdir(parents=True)
    (d / "trace.log").write_bytes(data)
    wh = str(tmp_path / name / "wh")
    pt2logs.ingest([str(d)], wh)
    con = pt2logs.connect(wh)
    counts = {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in content_tables()}
    errors = con.execute(
        "SELECT kind, severity, message, excerpt FROM ingest_errors ORDER BY ALL"
    ).fetchall()
    con.close()
    return wh, counts, errors


@pytest.fixture(scope="module")
def plain(
    trace: bytes, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, int], list[tuple]]:
    _, counts, errors = ingest_one(tmp_path_factory.mktemp("plain"), "plain", trace)
    assert counts["events"] > 300
    return counts, errors


def _members(data: bytes, compress, n: int = 3) -> bytes:
    cuts = [0, *(len(data) * k // n for k in range(1, n)), len(data)]
    return b"".join(compress(data[a:b]) for a, b in zip(cuts, cuts[1:]))


def _zstd(data: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor().compress(data)


@pytest.mark.parametrize(
    "how", ["gzip members", "gzip members + padding between", "zstd frames", "bz2 streams"]
)
def test_multi_member_files_equal_the_plain_file(tmp_path, trace, plain, how):
    if how == "gzip members":
        data = _members(trace, gzip.compress)
    elif how == "gzip members + padding between":
        data = _members(
            trace, lambda b: gzip.compress(b) + bytes(512 - len(gzip.compress(b)) % 512)
        )
    elif how == "zstd frames":
        data = _members(trace, _zstd)
    else:
        data = _members(trace, bz2.compress)
    _, counts, errors = ingest_one(tmp_path, "c", data)
    assert (counts, errors) == plain


@pytest.mark.parametrize(
    "tail", [bytes(64 << 10), b"\x00\x00", b"-- log shipper trailer --\n" + bytes(range(256))]
)
def test_bytes_after_a_gzip_member_lose_no_row(tmp_path, trace, plain, tail):
    """Zero padding is read as padding; other trailing bytes are one warning with their offset."""
    gz = gzip.compress(trace)
    _, counts, errors = ingest_one(tmp_path, "gz", gz + tail)
    assert counts == plain[0]
    if not tail.strip(b"\0"):
        assert errors == plain[1]
        return
    extra = [e for e in errors if e not in plain[1]]
    assert len(extra) == 1
    kind, severity, message, excerpt = extra[0]
    assert (kind, severity) == ("trailing_data", "warning")
    assert f"{len(tail)} bytes after the end of the gzip stream, from byte {len(gz)}" in message
    assert excerpt.startswith("-- log shipper trailer --")


def test_a_gzip_cut_at_a_record_boundary_is_truncated(tmp_path, trace):
    """The cut stream decompresses to whole records (the reader sees nothing wrong): the missing
    end-of-stream marker is what says the file was cut. Every row before the cut is kept."""
    cut = re.compile(rb"\n[VIWEC]\d{4} ").search(trace, len(trace) // 2).start() + 1
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    head = c.compress(trace[:cut]) + c.flush(
        zlib.Z_FULL_FLUSH
    )  # everything up to the cut, byte-aligned
    whole = head + c.compress(trace[cut:]) + c.flush()
    assert gzip.decompress(whole) == trace
    _, counts, errors = ingest_one(tmp_path, "gz", head)
    _, prefix_counts, prefix_errors = ingest_one(tmp_path, "prefix", trace[:cut])
    assert counts == prefix_counts and counts["events"] > 100
    extra = [e for e in errors if e not in prefix_errors]
    assert [(k, s) for k, s, _, _ in extra] == [("truncated", "error")]
    assert (
        "without its end-of-stream marker" in extra[0][2]
        and "rows before this point were kept" in extra[0][2]
    )


# ----------------------------------------------------------------------------- memory


def write_bomb(path: Path, kind: str, head: bytes, fill: bytes, mb: int) -> Path:
    """``head`` then ``mb`` MB of ``fill`` bytes, compressed with a streaming writer."""
    if kind == "gzip":
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
    elif kind == "bz2":
        c = bz2.BZ2Compressor()
    else:
        import zstandard

        c = zstandard.ZstdCompressor().compressobj()
    block = fill * ((1 << 20) // len(fill))
    with open(path, "wb") as f:
        f.write(c.compress(head))
        for _ in range(mb):
            f.write(c.compress(block))
        f.write(c.flush())
    return path


def peak_rss_mb(
    code: str, *args: str, kill_above_mb: int = 1536, timeout: float = 300
) -> tuple[float, int]:
    """Run ``code`` in a child Python; (its peak RSS in MB, return code). The child prints its own high
    water mark at the end (VmHWM: ``ru_maxrss`` would carry this big parent's over the exec); a watchdog
    kills it past ``kill_above_mb`` (then the peak is the largest RSS the watchdog saw)."""
    psutil = pytest.importorskip("psutil")
    if not os.path.exists("/proc/self/status"):
        pytest.skip("peak RSS is read from /proc/self/status (Linux)")
    code += "\nimport re; print('PEAK', re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    proc = psutil.Popen(
        [sys.executable, "-c", code, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    seen, t0 = 0, time.monotonic()
    while proc.poll() is None:
        try:
            seen = max(seen, proc.memory_info().rss)
        except psutil.Error:
            break
        if seen > kill_above_mb << 20 or time.monotonic() - t0 > timeout:
            proc.kill()
            break
        time.sleep(0.01)
    out = proc.communicate()[0].decode()
    m = re.search(r"PEAK (\d+)", out)
    return (int(m.group(1)) / 1024 if m else seen / 2**20), proc.returncode


STREAM = """
import sys
from pt2logs.inputs.sources import ReadResult, filesystem, stream
rr = ReadResult()
n = sum(len(c) for c in stream(*filesystem(sys.argv[1]), rr))
assert n == int(sys.argv[2]) << 20 and rr.error is None, (n, rr.error)
"""


@pytest.mark.parametrize("kind", ["gzip", "zstd", "bz2"])
def test_a_compression_bomb_streams_in_flat_memory(tmp_path, kind):
    """400 MB of zeros, a few hundred KB (gzip) or bytes (zstd, bz2) on disk: decompressed in chunks
    of 4 MB, never as one buffer (before: one buffer of all 400 MB)."""
    bomb = write_bomb(tmp_path / f"bomb.{kind}", kind, b"", b"\0", 400)
    peak, rc = peak_rss_mb(STREAM, str(bomb), "400")
    assert rc == 0
    assert peak <= MAX_RSS_MB / 2, peak


INGEST = """
import sys, pt2logs
r = pt2logs.ingest([sys.argv[1]], sys.argv[2])
print("EVENTS", r.events)
"""


@pytest.mark.parametrize("fill", [b"\0", b"\n"], ids=["zeros", "newlines"])
def test_a_gzip_bomb_ingests_within_the_memory_bound(tmp_path, trace, fill):
    bomb = write_bomb(tmp_path / "trace.log.gz", "gzip", trace, fill, 300)
    # killed at twice the bound: past it the test has failed anyway (newlines reached 23.7 GB before the fix)
    peak, rc = peak_rss_mb(
        INGEST, str(bomb), str(tmp_path / "wh"), kill_above_mb=2 * MAX_RSS_MB, timeout=120
    )
    assert rc == 0 and peak <= MAX_RSS_MB, f"peak RSS {peak:.0f} MB, rc {rc}"

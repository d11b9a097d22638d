"""Hostile inputs on the readers' side (issue 31, items 1, 2, 4, 5): documents and lines built to blow
up stay bounded, blank lines cost nothing per line, undecodable compressed files are errors (never
"empty file"), a file name that is not UTF-8 reads the same on both trace paths."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

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


def _table_rows(wh: str) -> dict[str, list[str]]:
    """Every row of every table with a ``file`` column (``txn`` aside), as sorted reprs."""
    con = pt2logs.connect(wh)
    try:
        out = {}
        for (t,) in con.execute(
            "SELECT DISTINCT table_name FROM information_schema.columns WHERE column_name = 'file'"
        ).fetchall():
            rows = con.execute(f'SELECT * EXCLUDE (txn) FROM "{t}"').fetchall()
            out[t] = sorted(map(repr, rows))
        return out
    finally:
        con.close()


@pytest.mark.skipif(os.name != "posix", reason="a file name of arbitrary bytes is a POSIX thing")
def test_a_trace_named_in_non_utf8_bytes_reads_the_same_on_both_paths(tmp_path, monkeypatch):
    """Before: the native path lost the file (reader_failed: surrogates not allowed, from the file
    column) where the Python path read it. Both now give the same rows in every table, the name's bad
    bytes as \\xNN (rows.safe_text)."""
    src = next(SAMPLE_TRACE.iterdir())
    d = tmp_path / "in"
    d.mkdir()
    shutil.copy(src, os.fsdecode(os.path.join(os.fsencode(d), b"rank\xff.log")))
    got = {}
    for flag in ("1", "0"):
        monkeypatch.setenv("PT2LOGS_NATIVE", flag)
        wh = str(tmp_path / f"wh{flag}")
        pt2logs.ingest([str(d)], wh)
        assert _rows(wh, "SELECT kind FROM ingest_errors WHERE severity = 'error'") == []
        assert _rows(wh, "SELECT DISTINCT file FROM events") == [("rank\\xff.log",)]
        got[flag] = _table_rows(wh)
    assert len(got["1"]["events"]) > 1000 and got["1"]["recompiles"]
    assert got["1"] == got["0"]


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
        zstandard.ZstdDecompressor().decompressobj().decompress(
            blob
        )  # what it was: undecodable by default
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
    from pt2logs.inputs import compressed
    from pt2logs.inputs.sources import ReadResult, filesystem, stream

    monkeypatch.setattr(compressed, "MAX_ZSTD_WINDOW", 256 << 10)
    data = b"".join(b"line %d of a log written with zstd --long=31\n" % i for i in range(40_000))
    p = tmp_path / "big.log.zst"
    p.write_bytes(_zstd_long31(data))
    rr = ReadResult()
    out = b"".join(stream(*filesystem(str(p)), rr))
    assert out == data[: 256 << 10]
    assert (
        rr.error is not None
        and "needs a 2 GiB window" in rr.error
        and "zstd -d --long=31" in rr.error
    ), rr.error


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
    (msg,) = [
        m for (m,) in _rows(wh, "SELECT message FROM ingest_errors WHERE kind = 'unreadable'")
    ]
    import re

    where = int(
        re.search(r"gzip data does not decode at or before stored byte (\d+)", msg).group(1)
    )
    assert at < where <= len(gz), (at, msg)
    kept = _rows(wh, "SELECT sum(n_lines) FROM log_lines")[0][0]
    assert kept and kept > 40_000 // 2, kept


# ----------------------------------------------------------------------------- items 1 and 2: lines

GLOG_LINE = b"I1122 09:44:21.382000 14352 torch/_dynamo/convert_frame.py:1] [0/0] %s\n"
OTHER_LINE = b"W1122 09:44:22.000000 14352 torch/_dynamo/guards.py:7] %s\n"  # another message (another prefix)


def _read_capture(chunks) -> tuple[dict[str, list], object]:
    """Every row a TORCH_LOGS capture gives, by table, read straight through the reader."""
    from pt2logs.readers.kit import FileContext
    from pt2logs.readers.lines.torch_logs import read_torch_logs

    ctx = FileContext(file="capture.txt", batch_rows=1 << 20, batch_bytes=1 << 40)
    out: dict[str, list] = {}
    for table, batch in read_torch_logs(chunks, ctx):
        out.setdefault(table, []).extend(batch.to_pylist())
    return out, ctx.stats


def test_an_over_long_line_keeps_its_head_and_reports_the_cut(tmp_path):
    """Before: a 5 MB line was kept whole (pieces of 64 MiB: a 1 GB line took 1.13 GB at ingest). Now
    its first MAX_TEXT_LINE bytes are kept, the rest passed over to its newline, and one warning at
    its line says how long it was; the lines after keep their numbers."""
    from pt2logs.readers.kit import MAX_TEXT_LINE

    long = b"x" * (5 << 20) + "é".encode() * 10
    data = GLOG_LINE % b"before" + b"print output: " + long + b"\n" + OTHER_LINE % b"after"
    chunks = [data[i : i + 65536] for i in range(0, len(data), 65536)]
    rows, stats = _read_capture(chunks)
    by_line = {r["line_no"]: r for r in rows["log_lines"]}
    assert sorted(by_line) == [1, 2, 3] and stats.lines == 3
    assert by_line[3]["message"] == "after"
    kept = by_line[2]["message"]
    assert kept.startswith("print output: xxx") and len(kept.encode()) == MAX_TEXT_LINE
    (err,) = [e for e in rows["ingest_errors"] if e["kind"] == "line_too_long"]
    assert err["line_no"] == 2 and err["severity"] == "warning"
    assert (
        f"a line of {len(long) + 14:,} bytes" in err["message"]
        and "the rest skipped" in err["message"]
    )


INGEST_JOBS1 = """
import sys, time, pt2logs
from pt2logs.ingestion.engines import Engine
t = time.process_time()
r = pt2logs.ingest([sys.argv[1]], sys.argv[2], engine=Engine())
print("CPU", time.process_time() - t)
"""


def _one_line_gz(path: Path, mb: int) -> Path:
    import zlib

    c = zlib.compressobj(1, zlib.DEFLATED, 31)
    block = b"y" * (1 << 20)
    with open(path, "wb") as f:
        f.write(c.compress(GLOG_LINE % b"start" + b"progress: "))
        for _ in range(mb):
            f.write(c.compress(block))
        f.write(c.compress(b"\n" + OTHER_LINE % b"end") + c.flush())
    return path


def test_a_gz_of_one_huge_line_ingests_in_flat_memory(tmp_path):
    """One 120 MB line and one 480 MB line (a few hundred KB of gzip each): the same peak, far under
    the bound (before: the line was stored whole, 1.4 GB for a 5 GB line, and 82 s)."""
    from tests.test_compressed import MAX_RSS_MB, peak_rss_mb

    peaks = []
    for mb in (120, 480):
        d = tmp_path / f"in{mb}"
        d.mkdir()
        _one_line_gz(d / "torch_logs.txt.gz", mb)
        peak, rc = peak_rss_mb(
            INGEST_JOBS1,
            str(d),
            str(tmp_path / f"wh{mb}"),
            kill_above_mb=2 * MAX_RSS_MB,
            timeout=120,
        )
        assert rc == 0, rc
        peaks.append(peak)
        stored = _rows(
            str(tmp_path / f"wh{mb}"), "SELECT max(length(message)), sum(n_lines) FROM log_lines"
        )[0]
        assert stored[0] <= 1 << 20 and stored[1] == 3, stored
    # flat (4x the line, the same peak) and under the documented bound; the process alone is ~145 MB
    assert max(peaks) <= MAX_RSS_MB and peaks[1] - peaks[0] < 40, peaks


def test_blank_lines_cost_nothing_per_line():
    """20 MB of newlines (20 million blank lines) between two log lines: read in bulk (before: 33 s of
    CPU, ~0.6 MB/s), kept as foreign blocks of at most 1000 lines, every later line numbered right."""
    import time

    n = 20 << 20
    data = [
        GLOG_LINE % b"first",
        b"\n" * (4 << 20),
        b"\r\n" * 8,
        b"\n" * (n - (4 << 20) - 8),
        OTHER_LINE % b"last",
    ]
    chunks = [
        c for part in data for c in (part[i : i + (4 << 20)] for i in range(0, len(part), 4 << 20))
    ]
    t = time.process_time()
    rows, stats = _read_capture(chunks)
    cpu = time.process_time() - t
    assert cpu < 5, cpu
    lines = rows["log_lines"]
    assert stats.lines == n + 2
    assert [r["line_no"] for r in lines if not r["foreign"]] == [1, n + 2]
    blocks = [r for r in lines if r["foreign"]]
    assert sum(r["n_lines"] for r in blocks) == n and max(r["n_lines"] for r in blocks) == 1000
    assert all(r["message"] == "\n" * (r["n_lines"] - 1) for r in blocks)
    assert blocks[0]["line_no"] == 2 and [b["line_no"] for b in blocks] == [
        2 + 1000 * i for i in range(len(blocks))
    ]


# ----------------------------------------------------------------------------- item 1: documents

#: kit.MAX_JSON_DOC, the most of a JSON document read whole (docs/inputs.md, Limits)
JSON_CAP = 8 << 20


def test_the_documented_caps_are_the_code_s():
    from pt2logs.readers import kit

    assert (kit.MAX_JSON_DOC, kit.MAX_DOC, kit.MAX_TEXT_LINE) == (JSON_CAP, 16 << 20, 1 << 20)


INGEST_ONE_FORMAT = """
import sys, time, pt2logs
from pt2logs.ingestion.engines import Engine
r = pt2logs.ingest([sys.argv[1]], sys.argv[2], engine=Engine(), fmt=sys.argv[3])
"""


def _huge_keys_counters_gz(path: Path, n_keys: int, key_kb: int = 200) -> Path:
    """A counters dump whose graph_break reasons are ``key_kb`` KB each: a few hundred KB of gzip."""
    import zlib

    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        f.write(c.compress(b'{"counters": {"stats": {"calls_captured": 3}, "graph_break": {'))
        for i in range(n_keys):
            f.write(
                c.compress(b'%s"reason %d: %s": 1' % (b"," if i else b"", i, b"x" * (key_kb << 10)))
            )
        f.write(c.compress(b"}}}") + c.flush())
    return path


def test_a_counters_gz_of_huge_keys_is_refused_in_flat_memory(tmp_path):
    """200 MB of JSON in a ~200 KB .gz (1,000 keys of 200 KB): before, read whole and expanded
    (1.04 GB); now the read stops at MAX_JSON_DOC and says so, in a small and flat peak."""
    from tests.test_compressed import peak_rss_mb

    d = tmp_path / "in"
    d.mkdir()
    gz = _huge_keys_counters_gz(d / "counters.json.gz", 1000)
    assert gz.stat().st_size < 1 << 20
    wh = str(tmp_path / "wh")
    peak, rc = peak_rss_mb(
        INGEST_ONE_FORMAT, str(d), wh, "counters_json", kill_above_mb=600, timeout=120
    )
    assert rc == 0 and peak < 200, peak
    (err,) = _rows(wh, "SELECT kind, severity, message, path FROM ingest_errors")
    assert err[:2] == ("too_large", "error") and err[3].endswith("counters.json.gz")
    assert f"goes on past byte {JSON_CAP:,}" in err[2]


def test_a_counters_dump_just_under_the_cap_stays_under_the_bound(tmp_path):
    """The worst shape under the cap: ~8 MiB of tiny counters (500k rows). Its rows leave in batches
    (before: all held until the end)."""
    import orjson
    from tests.test_compressed import MAX_RSS_MB, peak_rss_mb

    d = tmp_path / "in"
    d.mkdir()
    doc = orjson.dumps({"counters": {"stats": {f"k{i}": i for i in range(500_000)}}})
    assert len(doc) < JSON_CAP
    (d / "counters.json").write_bytes(doc)
    wh = str(tmp_path / "wh")
    peak, rc = peak_rss_mb(
        INGEST_ONE_FORMAT, str(d), wh, "counters_json", kill_above_mb=2 * MAX_RSS_MB, timeout=120
    )
    assert rc == 0 and peak <= MAX_RSS_MB, peak
    assert _rows(wh, "SELECT count(*), max(value) FROM counters") == [(500_000, 499_999)]


def test_a_spyre_timing_record_past_the_cap_is_an_error_not_gigabytes():
    """Before: a 249 MB timing record was read whole and took 1.6 GB. Past the cap it is not read, and
    the error says where the read stopped; one under it still reads (rows in batches)."""
    import orjson

    from pt2logs.readers.kit import FileContext
    from pt2logs.readers.spyre.documents import read_timing

    ev = {
        "name": "kernel:fwd:3",
        "ordinal": 1,
        "parent_ordinal": None,
        "t_start_ns": 1,
        "t_end_ns": 9,
        "self_ns": 8,
    }
    for n, ok in ((100_000, False), (20_000, True)):
        doc = orjson.dumps({"meta": {"pid": 7}, "events": [dict(ev, ordinal=i) for i in range(n)]})
        assert (len(doc) < JSON_CAP) == ok
        ctx = FileContext(file="rec.7.json")
        out: dict[str, int] = {}
        errors = []
        for table, batch in read_timing(
            [doc[i : i + (1 << 20)] for i in range(0, len(doc), 1 << 20)], ctx
        ):
            out[table] = out.get(table, 0) + batch.num_rows
            if table == "ingest_errors":
                errors += batch.to_pylist()
        if ok:
            assert out == {"spyre_timing": n} and not errors
        else:
            assert "spyre_timing" not in out
            assert [e["kind"] for e in errors] == [
                "too_large"
            ] and f"past byte {JSON_CAP:,}" in errors[0]["message"]


def test_iter_lines_agrees_with_a_plain_split_wherever_the_chunks_are_cut():
    """3,000 random inputs of letters, é, LF, CR, each cut into random chunks, with a small line cap:
    the lines (blank runs expanded back) and the line_too_long reports equal a plain split's."""
    import random

    from pt2logs.readers.bounded import _cut_at_char, iter_lines

    def expand(items):
        out = []
        for n, raw in items:
            out += [(n + i, b"") for i in range(len(raw) + 1)] if raw[:1] == b"\n" else [(n, raw)]
        return out

    def split(data: bytes, cap: int):
        parts = data.split(b"\n")
        if parts[-1] == b"":
            parts.pop()
        lines = [
            (i, _cut_at_char(p, cap) if len(p) > cap else p.removesuffix(b"\r"))
            for i, p in enumerate(parts, 1)
        ]
        return lines, [i for i, p in enumerate(parts, 1) if len(p) > cap]

    rnd = random.Random(2)
    for _ in range(3000):
        data = bytes(rnd.choice(b"ab\n\n\r\xc3") for _ in range(rnd.randrange(0, 80))).replace(
            b"\xc3", "é".encode()
        )
        cap = rnd.randrange(1, 12)
        cuts = sorted(rnd.sample(range(len(data) + 1), min(len(data) + 1, rnd.randrange(0, 6))))
        chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]
        cut_at: list[int] = []
        got = expand(iter_lines(chunks, lambda kind, n, *a, seen=cut_at: seen.append(n), cap))
        assert (got, cut_at) == split(data, cap), (data, cap, chunks)


def test_one_endless_message_is_cut_into_rows_of_at_most_16_mib():
    """40 MB of lines of one TORCH_LOGS prefix: before, one message held whole (up to 256 MiB, then
    joined: twice that); now rows of at most 16 MiB, each cut a message_too_long warning."""
    line = GLOG_LINE % (b"z" * 90)
    data = line * ((40 << 20) // len(line))
    rows, _ = _read_capture([data[i : i + (4 << 20)] for i in range(0, len(data), 4 << 20)])
    msgs = rows["log_lines"]
    assert sum(r["n_lines"] for r in msgs) == data.count(b"\n")
    assert len(msgs) >= 2 and max(len(r["message"]) for r in msgs) <= (16 << 20) + len(line)
    assert [e["kind"] for e in rows["ingest_errors"]] == ["message_too_long"] * (len(msgs) - 1)


def test_many_processes_cannot_add_up_open_messages(monkeypatch):
    """Interleaved messages of 4 processes: past MAX_OPEN_BYTES together (made 1 MiB here) every open
    message is closed as a row; no line is lost and the text of each process stays in order."""
    from pt2logs.readers.lines import torch_logs

    monkeypatch.setattr(torch_logs, "MAX_OPEN_BYTES", 1 << 20)
    lines = [
        b"I1122 09:44:21.382000 %d torch/_dynamo/x.py:1] %s\n"
        % (100 + i % 4, b"%07d" % i + b"q" * 90)
        for i in range(40_000)
    ]
    rows, _ = _read_capture([b"".join(lines)])
    msgs = rows["log_lines"]
    assert sum(r["n_lines"] for r in msgs) == 40_000
    assert max(len(r["message"]) for r in msgs) <= (1 << 20)
    for pid in range(100, 104):
        text = "\n".join(
            r["message"] for r in sorted(msgs, key=lambda r: r["line_no"]) if r["pid"] == pid
        )
        assert text.split("\n") == [f"{i:07d}" + "q" * 90 for i in range(pid - 100, 40_000, 4)]
    assert {e["kind"] for e in rows["ingest_errors"]} == {"message_too_long"}


def test_an_over_long_tlparse_raw_jsonl_line_is_reported_not_a_reader_failure(monkeypatch):
    """raw.jsonl lines are trace records: bounded like the trace's (MAX_LINE, made 1000 bytes here).
    Before, the line_too_long report reached TraceState.error with a severity it does not take
    (TypeError: the whole file became one reader_failed)."""
    from pt2logs.readers.documents import tlparse_dir
    from pt2logs.readers.kit import FileContext

    monkeypatch.setattr(tlparse_dir, "MAX_LINE", 1000, raising=False)
    data = b'{"string_table": []}\n{"x": "' + b"a" * 5000 + b'"}\n'
    errors = [
        r
        for t, b in tlparse_dir.read_tlparse_dir([data], FileContext(file="tl/raw.jsonl"))
        if t == "ingest_errors"
        for r in b.to_pylist()
    ]
    assert ("line_too_long", "error", 2) in [
        (e["kind"], e["severity"], e["line_no"]) for e in errors
    ]


def test_a_text_document_past_the_cap_keeps_its_head_and_says_its_size():
    """A 20 MB output_code.py: before, read whole (a 31 MB one with a non-BMP character peaked at
    375 MB: bytes, 4-byte text, Arrow); now its whole lines up to MAX_DOC (16 MiB) are read, one
    warning gives its size and where the skipped rest starts, its kernels up to there are rows."""
    from pt2logs.readers.documents.compile_debug import read_compile_debug
    from pt2logs.readers.kit import FileContext

    head = b"# AOT ID: ['0_inference']\nfrom ctypes import c_void_p\n"
    line = "    buf%d = empty_strided((1024,), (1,), device='cuda')  # \U0001f600\n"
    body = "".join(line % i for i in range(320_000)).encode()
    data = head + body
    assert len(data) > 20 << 20
    ctx = FileContext(
        file="torch_compile_debug/run_1/torchinductor/model__0_inference_0.0/output_code.py"
    )
    rows: dict[str, list] = {}
    for table, batch in read_compile_debug(
        [data[i : i + (4 << 20)] for i in range(0, len(data), 4 << 20)], ctx
    ):
        rows.setdefault(table, []).extend(batch.to_pylist())
    (art,) = rows["debug_artifacts"]
    assert (
        art["n_bytes"] <= 16 << 20
        and art["text"].endswith("\n")
        and data.startswith(art["text"].encode())
    )
    (err,) = rows["ingest_errors"]
    assert (err["kind"], err["severity"]) == ("too_large", "warning")
    assert f"of {len(data):,} bytes: its first {art['n_bytes']:,} bytes" in err["message"]


def test_a_tlparse_payload_past_the_cap_keeps_its_head_as_the_trace_does(monkeypatch):
    """A payload file larger than MAX_PAYLOAD (made 4 KiB here): its head is the record's payload and a
    payload_too_large warning says so, as for a trace (before: read whole, up to 256 MiB)."""
    import hashlib

    from pt2logs.readers.documents import tlparse_dir
    from pt2logs.readers.kit import FileContext

    monkeypatch.setattr(tlparse_dir, "MAX_PAYLOAD", 4096, raising=False)
    payload = b"".join(b"line %d of a big artifact\n" % i for i in range(2000))
    md5 = hashlib.md5(payload).hexdigest()
    raw = (
        b'{"string_table": []}\n{"artifact": {"name": "big", "encoding": "string"}, "has_payload": "%s", '
        b'"timestamp": "2024-11-22T09:44:21.382000Z", "thread": 1, "pathname": " x.py", "lineno": 1}\n'
        % md5.encode()
    )
    files = {f"payloads/{md5}.txt": payload}

    def sibling(name: str):
        if name not in files:
            raise FileNotFoundError(name)
        return [files[name][i : i + 1000] for i in range(0, len(files[name]), 1000)]

    ctx = FileContext(file="tl/raw.jsonl", open_sibling=sibling)
    rows: dict[str, list] = {}
    for table, batch in tlparse_dir.read_tlparse_dir([raw], ctx):
        rows.setdefault(table, []).extend(batch.to_pylist())
    (ev,) = [e for e in rows["events"] if e["event_type"] == "artifact"]
    assert ev["payload"] == payload[:4096].decode()
    assert [
        (e["kind"], e["line_no"]) for e in rows["ingest_errors"] if e["kind"] == "payload_too_large"
    ] == [("payload_too_large", 2)]

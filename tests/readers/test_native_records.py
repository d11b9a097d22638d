"""The native record splitter (pt2logs._native._records) against its oracle, the pure-Python splitter.

Both must give the same records (all ten fields), the same errors in the same order, and, read through
the TORCH_TRACE reader, the same tables, on every real trace fixture, at chunk sizes down to one byte,
on hypothesis-generated and damaged logs. The native md5 is checked against hashlib.
"""

from __future__ import annotations

import hashlib
import os
import random
import time
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import FIXTURES, ROOT
from tests.test_fuzz import mutate
from tests.tracegen import chromium, record

from pt2logs.readers.kit import FileContext
from pt2logs.readers.trace import native as records_native
from pt2logs.readers.trace import records
from pt2logs.readers.trace.native import iter_records_native, native_status
from pt2logs.readers.trace.records import iter_records
from pt2logs.readers.trace.torch_trace import read_trace

# a build without a compiler is allowed only when asked for (PT2LOGS_NATIVE_BUILD=0): otherwise a
# missing extension is a failed build, not a skip
if records_native._ext is None and os.environ.get("PT2LOGS_NATIVE_BUILD") == "0":
    pytest.skip("native splitter deliberately not built", allow_module_level=True)
_ext = records_native._ext


def trace_files() -> list[Path]:
    found = [
        p
        for base in (FIXTURES / "tlparse", FIXTURES / "gpu", ROOT / "sample_traces")
        if base.is_dir()
        for p in sorted(base.rglob("*"))
        if p.is_file() and p.suffix in (".log", ".txt")
    ]
    return [
        p for p in found if b"] {" in p.read_bytes()[:4096]
    ]  # TORCH_TRACE files (tlparse's test logs included)


def both(data: bytes, chunk: int) -> tuple:
    chunks = [data[i : i + chunk] for i in range(0, len(data), chunk)] or [b""]
    out = []
    for fn in (iter_records, iter_records_native):
        errors: list = []
        recs = [tuple(r[:10]) for r in fn(iter(chunks), lambda *e, errors=errors: errors.append(e))]
        out.append((recs, errors))
    return out[0], out[1]


def assert_same(data: bytes, chunk: int) -> tuple:
    py, nat = both(data, chunk)
    assert nat[1] == py[1], f"errors differ at chunk {chunk}"
    assert nat[0] == py[0], f"records differ at chunk {chunk}"
    return py


def test_the_extension_is_built_and_used():
    assert _ext is not None, (
        "pt2logs._native._records is not built: pip install -e . (or python hatch_build.py)"
    )
    assert native_status() == (True, "")


_STALE = """
import sys, types
from pt2logs._native import _records
stale = types.ModuleType(_records.__name__)  # an extension built from older sources: no ABI, no PhaseCols
for name in ("Scanner", "event_columns", "chromium", "split_components", "md5_hex"):
    setattr(stale, name, getattr(_records, name))
sys.modules[_records.__name__] = stale
import pt2logs._native
pt2logs._native._records = stale
from pt2logs.readers.trace.native import native_status
from pt2logs.readers.kit import FileContext
from pt2logs.readers.trace.torch_trace import read_trace
print(native_status()[1])
rows = sum(b.num_rows for t, b in read_trace([open(sys.argv[1], "rb").read()], FileContext(file="t.log")) if t == "compile_phases")
print(rows)
"""


def test_an_extension_built_from_older_sources_is_not_used():
    """An in-place build not redone after a pull lacks functions the readers call: it is set aside with a
    reason (ingest notes it) and the Python path reads the trace, instead of an AttributeError mid-read."""
    import subprocess
    import sys

    trace = next((FIXTURES / "tlparse").glob("chromium_events.log"))
    out = subprocess.run(
        [sys.executable, "-c", _STALE, str(trace)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    why, rows = out.stdout.strip().splitlines()
    assert "interface 1, these readers need" in why and "hatch_build.py" in why
    assert int(rows) > 0


def test_md5_matches_hashlib():
    rng = random.Random(1321)
    for n in [*range(0, 130), 1000, 4095, 4096, 65537]:
        data = rng.randbytes(n)
        assert _ext.md5_hex(data) == hashlib.md5(data).hexdigest(), n


_MANY = """
import hashlib, random, sys
from pt2logs._native import _records
rng = random.Random(int(sys.argv[1]))
edges = [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 121, 127, 128, 129, 4096]
for _ in range(200):  # batches of every size, lengths mixed: lanes end and refill at every point
    batch = [rng.randbytes(rng.choice(edges) if rng.random() < 0.5 else rng.randint(0, 5000)) for _ in range(rng.randint(0, 40))]
    assert _records.md5_hex_many(batch) == [hashlib.md5(b).hexdigest() for b in batch]
print("same")
"""


@pytest.mark.parametrize("scalar", ["", "1"])
def test_batch_md5_is_md5(scalar):
    """The splitter's batch md5 (md5x8.h: eight messages at once with AVX2, or one by one without) against
    hashlib, in a process of its own (the choice is made once per process)."""
    import subprocess
    import sys

    env = (
        {**os.environ, "PT2LOGS_MD5_SCALAR": scalar}
        if scalar
        else {k: v for k, v in os.environ.items() if k != "PT2LOGS_MD5_SCALAR"}
    )
    out = subprocess.run(
        [sys.executable, "-c", _MANY, "7"], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.stdout.strip() == "same", out.stderr


def test_every_trace_fixture_same_records_at_every_chunk_size():
    files = trace_files()
    assert len(files) >= 20
    for p in files:
        data = p.read_bytes()
        for chunk in (1 << 20, 4093):
            assert_same(data, chunk)
        head = data[
            :20_000
        ]  # byte-sized chunks: the oracle is slow at that, so on a head of each file
        for chunk in (1, 2, 3):
            assert_same(head, chunk)
        for r in iter_records_native([data], lambda *e: None):
            assert r.md5 == (hashlib.md5(r.payload).hexdigest() if r.payload is not None else None)


def read_tables(data: bytes, native: bool, monkeypatch) -> tuple:
    monkeypatch.setenv("PT2LOGS_NATIVE", "1" if native else "0")
    assert native_status()[0] is native
    ctx = FileContext(file="t.log", path="/x/t.log", batch_rows=500)
    out: dict[str, list] = {}
    for name, batch in read_trace(
        [data[i : i + (1 << 16)] for i in range(0, len(data), 1 << 16)], ctx
    ):
        out.setdefault(name, []).append(batch)
    return {k: pa.Table.from_batches(v).to_pylist() for k, v in out.items()}, vars(ctx.stats)


def test_every_trace_fixture_same_tables(monkeypatch):
    for p in trace_files():
        data = p.read_bytes()
        assert read_tables(data, True, monkeypatch) == read_tables(data, False, monkeypatch), p


def _valid(n: int) -> bytes:
    return "".join(
        chromium("s", "B", 1.7e15 + i) + record({"artifact": {"name": f"a{i}"}}, f"x\ty\n\tz{i}\n")
        for i in range(n)
    ).encode()


DAMAGE = {
    "truncated": lambda d: d[: len(d) * 2 // 3],
    "nuls": lambda d: d.replace(b"\n\t", b"\n\t\x00", 3).replace(b"V12", b"\x00V12", 2),
    "invalid utf-8": lambda d: d.replace(b"x", b"\xff\xfe", 5),
    "crlf": lambda d: d.replace(b"\n", b"\r\n"),
    "crlf mixed": lambda d: d.replace(b"\n", b"\r\n", 7),
    "no final newline": lambda d: d.rstrip(b"\n"),
    "empty lines": lambda d: d.replace(b"\n\t", b"\n\n\n\t", 4),
    "garbage": lambda d: d.replace(b"\nV12", b"\nnot a header\nV12", 3),
    "orphans": lambda d: b"\tstray\n\n\t\n" + d,
    "big numbers": lambda d: d.replace(b" 4242 ", b" 123456789012345678901234567890 ", 2),
}


def test_damaged_logs_same_records_and_tables(monkeypatch):
    data = _valid(12)
    for name, damage in DAMAGE.items():
        bad = damage(data)
        for chunk in (1, 5, 64, 1 << 20):
            assert_same(bad, chunk)
        assert read_tables(bad, True, monkeypatch) == read_tables(bad, False, monkeypatch), name


def test_over_long_lines_and_payloads_same(monkeypatch):
    monkeypatch.setattr(records, "MAX_LINE", 300)
    monkeypatch.setattr(records, "MAX_PAYLOAD", 100)
    data = (
        _valid(3)
        + record({"artifact": {"name": "big"}}, "p" * 250 + "\n" * 40 + "q" * 80).encode()
        + b"V" * 1000
        + b"\n"
        + _valid(2)
    )
    for chunk in (1, 7, 64, 333, 1 << 20):
        _, errors = assert_same(data, chunk)
        if (
            chunk <= 64
        ):  # the bounds apply per buffer of whole lines: small chunks make small buffers
            assert {"line_too_long", "payload_too_large"} <= {e[0] for e in errors}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                b"V1206 15:18:15.925000 1 a.py:1] {}\n",
                b"\t",
                b"\n",
                b"\r\n",
                b"x",
                b"\x00",
                b"\xff",
                b"I0101 00:00:00.000000  12 b:c:3] ",
                b'{"has_payload": "0"}',
                b"]",
                b":9] ",
            ]
        ),
        max_size=60,
    ),
    st.integers(1, 40),
)
def test_generated_logs_same(pieces, chunk):
    assert_same(b"".join(pieces), chunk)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=1500), st.integers(1, 64))
def test_arbitrary_bytes_same(data, chunk):
    assert_same(data, chunk)


def mutation_fuzz(check, seed: int, head: int, max_chunk: int) -> None:
    """Seeded, time-bounded differential fuzz (PT2LOGS_NATIVE_FUZZ_SECONDS, PT2LOGS_FUZZ_SEED): the heads of
    the real traces damaged by the mutation fuzzer, each given to ``check(data, chunk)``."""
    seconds = float(os.environ.get("PT2LOGS_NATIVE_FUZZ_SECONDS", 8))
    rng = random.Random(int(os.environ.get("PT2LOGS_FUZZ_SEED", seed)))
    seeds = [p.read_bytes()[:head] for p in trace_files()]
    deadline = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < deadline:
        check(mutate(rng.choice(seeds), rng), rng.choice((1 << 20, rng.randint(1, max_chunk))))
        rounds += 1
    assert rounds > 10


def test_mutation_fuzz_against_the_oracle():
    """Damaged real traces, random chunk sizes: the same records and errors."""
    mutation_fuzz(assert_same, 20, 30_000, 4096)


def test_ingest_says_once_when_the_python_splitter_is_used(tmp_path, monkeypatch):
    from pt2logs.api import ingest

    log = tmp_path / "run" / "dedicated_log_torch_trace_rank_0_x.log"
    log.parent.mkdir()
    log.write_bytes(_valid(3))
    monkeypatch.setenv("PT2LOGS_NATIVE", "0")
    res = ingest([str(log.parent)], str(tmp_path / "wh"))
    assert [n for n in res.notes if "pure Python" in n] == [
        "PT2LOGS_NATIVE=0: TORCH_TRACE files are split in pure Python"
    ]
    monkeypatch.setenv("PT2LOGS_NATIVE", "1")
    res = ingest([str(log.parent)], str(tmp_path / "wh2"))
    assert res.events > 0 and not [n for n in res.notes if "pure Python" in n]


def test_content_hash_is_a_hash_of_every_stored_byte(tmp_path):
    import pt2logs
    from pt2logs.api import ingest
    from pt2logs.inputs import sources

    log = tmp_path / "run" / "dedicated_log_torch_trace_rank_0_x.log"
    log.parent.mkdir()
    data = _valid(3)
    log.write_bytes(data)
    ingest([str(log.parent)], str(tmp_path / "wh"))
    con = pt2logs.connect(str(tmp_path / "wh"))
    (got,) = con.execute("SELECT content_hash FROM files").fetchone()
    con.close()
    if sources.xxhash is not None:
        assert got == "xxh3_128:" + sources.xxhash.xxh3_128(data).hexdigest()
    else:
        assert got == hashlib.sha1(data).hexdigest()
    assert got != sources.new_digest().hexdigest()  # not the digest of nothing


def test_without_the_extension_traces_are_read_in_python_and_ingest_says_why(tmp_path):
    import subprocess
    import sys
    import textwrap

    log = tmp_path / "run" / "dedicated_log_torch_trace_rank_0_x.log"
    log.parent.mkdir()
    log.write_bytes(_valid(2))
    code = textwrap.dedent(f"""
        import sys
        sys.modules["pt2logs._native._records"] = None  # as if no compiler had built it
        import pt2logs
        r = pt2logs.ingest([{str(log.parent)!r}], {str(tmp_path / "wh")!r})
        print(r.events, "|".join(r.notes))
    """)
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=120
    ).stdout
    events, notes = out.strip().split(" ", 1)
    assert (
        int(events) == 4 and "the native splitter is not built" in notes and "pure Python" in notes
    )

"""Mutation fuzzing of the real fixtures: no input crashes a reader or the batch it hands to the warehouse.

Each round takes a real example of a format (the contract test's EXAMPLES), damages it the ways real
logs get damaged or hostile input looks (flipped and cut bytes, lines swapped or repeated, JSON
numbers replaced by huge numbers, lists, objects, null, strings; glog thread ids and line numbers of
30 digits) and reads it the way ingest does: every batch is stamped and written as Parquet. A value
that fits no column is a ``bad_value`` warning with its line, never an exception. The rounds are
seeded and counted, not timed: every machine reads the same damaged inputs, and a failure here is one
anywhere (PT2LOGS_FUZZ_PASSES for more, PT2LOGS_FUZZ_SEED for others; PT2LOGS_FUZZ_SECONDS=N: for N s).
"""

from __future__ import annotations

import io
import os
import random
import re
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.conftest import FIXTURES
from tests.readers.test_format_contract import EXAMPLES

import pt2logs
from pt2logs.readers import FORMATS
from pt2logs.readers.kit import FileContext
from pt2logs.tables.rows import stamp
from pt2logs.tables.schema import TABLES

pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason="shared fixtures not present")

#: passes over every example (about 5 CPU seconds: 25 s of clock time before, which a loaded machine
#: spent on fewer rounds than a quiet one)
PASSES = int(os.environ.get("PT2LOGS_FUZZ_PASSES", 80))
SECONDS = float(os.environ.get("PT2LOGS_FUZZ_SECONDS", 0))
SEED = int(os.environ.get("PT2LOGS_FUZZ_SEED", 20261122))
_NUM = re.compile(rb'(?<=": )-?\d+(?:\.\d+)?(?=[,}\]])')
_GLOG_INTS = re.compile(rb"^([VIWEC]\d{4} \d\d:\d\d:\d\d\.\d{6}) +\d+ ([^\n]*?):\d+\]", re.M)
WEIRD = [
    b"4294967296",
    b"9223372036854775808",
    b"-9223372036854775809",
    b"1e300",
    b"[1, 2]",
    b'{"a": 1}',
    b"null",
    b'"abc"',
    b"true",
    b"123456789012345678901234567890",
    b"-1",
]


def mutate(data: bytes, rng: random.Random) -> bytes:
    out = data
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        if op == 0 and out:  # flip bytes
            b = bytearray(out)
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            out = bytes(b)
        elif op == 1 and out:  # cut
            out = out[: rng.randrange(len(out))]
        elif op == 2:  # JSON numbers -> weird values
            nums = list(_NUM.finditer(out))
            for m in rng.sample(nums, min(len(nums), rng.randint(1, 6))):
                w = rng.choice(WEIRD)
                out = (
                    out[: m.start()] + w + out[m.end() :]
                    if len(w) == m.end() - m.start()
                    else out.replace(m.group(0), w, 1)
                )
        elif op == 3:  # glog thread id / line number with 30 digits
            out = _GLOG_INTS.sub(
                lambda m: (
                    m.group(1)
                    + b" "
                    + b"9" * rng.choice((5, 30))
                    + b" "
                    + m.group(2)
                    + b":"
                    + b"7" * rng.choice((3, 30))
                    + b"]"
                ),
                out,
                count=rng.randint(1, 5),
            )
        elif op == 4:  # swap / repeat / drop lines
            lines = out.split(b"\n")
            if len(lines) > 2:
                i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
                choice = rng.randrange(3)
                if choice == 0:
                    lines[i], lines[j] = lines[j], lines[i]
                elif choice == 1:
                    lines.insert(i, lines[j])
                else:
                    del lines[i]
            out = b"\n".join(lines)
        elif op == 5:  # CRLF on some lines only
            out = out.replace(b"\n", b"\r\n", rng.randint(1, 20))
        else:  # a null envelope or a non-string artifact name
            out = (
                out.replace(
                    b'"name": "', rng.choice([b'"name": 5, "x": "', b'"name": ["a"], "x": "']), 1
                )
                if rng.random() < 0.5
                else out + b"\nV1206 15:18:15.925000 1500233 torch/_dynamo/utils.py:1288] null\n"
            )
    return out


def read_like_ingest(
    name: str, fname: str, data: bytes, siblings: dict[str, bytes], chunk: int
) -> int:
    def open_sibling(rel: str):
        if rel not in siblings:
            raise FileNotFoundError(rel)
        return [siblings[rel]]

    ctx = FileContext(
        file=fname, path=f"/in/{fname}", mtime=1.7e9, open_sibling=open_sibling, batch_rows=200
    )
    chunks = [data[i : i + chunk] for i in range(0, len(data), chunk)] or [b""]
    rows = 0
    for table, batch in FORMATS[name].read(iter(chunks), ctx):
        t = pa.Table.from_batches(
            [stamp(batch, TABLES[table], {"run_id": "r", "txn": "t", "rank": None})]
        )
        pq.write_table(t, io.BytesIO())
        rows += t.num_rows
    return rows


def test_mutated_fixtures_never_crash(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    examples = {name: make(tmp_path / name) for name, make in EXAMPLES.items()}
    deadline = time.monotonic() + SECONDS
    rounds = 0
    while time.monotonic() < deadline if SECONDS else rounds < PASSES * len(examples):
        for name, (fname, data, siblings) in examples.items():
            damaged = mutate(data, rng)
            try:
                read_like_ingest(name, fname, damaged, siblings, rng.choice((1 << 20, 4096, 333)))
            except Exception as e:  # noqa: BLE001 - the point is to find any
                (tmp_path / "crash.bin").write_bytes(damaged)
                raise AssertionError(
                    f"{name}: {type(e).__name__}: {e} (input in {tmp_path / 'crash.bin'})"
                ) from e
            rounds += 1
    assert rounds > 2 * len(examples)


def test_a_malformed_value_keeps_the_record_and_the_other_files(tmp_path: Path) -> None:
    """The issue's case: one bad frame_id used to abort the whole ingest and drop the good files too."""
    trace = (FIXTURES / "tlparse" / "simple.log").read_bytes().rstrip(b"\n") + b"\n"
    bad = b'V1206 15:18:15.925000 1500233 torch/_dynamo/utils.py:1288] {"dynamo_start": {}, "frame_id": 4294967296, "frame_compile_id": 0}\n'
    for i in range(8):
        (tmp_path / "in" / f"job{i}").mkdir(parents=True)
        (tmp_path / "in" / f"job{i}" / "dedicated_log_torch_trace_rank_0_x.log").write_bytes(trace)
    (tmp_path / "in" / "bad").mkdir()
    (tmp_path / "in" / "bad" / "dedicated_log_torch_trace_rank_0_x.log").write_bytes(trace + bad)
    res = pt2logs.ingest([str(tmp_path / "in")], str(tmp_path / "wh"))
    assert res.runs_new == 9
    con = pt2logs.connect(str(tmp_path / "wh"))
    n_good = con.execute(
        "SELECT count(*) FROM events e JOIN runs r USING (run_id) WHERE r.name = 'job0'"
    ).fetchone()[0]
    got = con.execute(
        "SELECT count(*), count(frame_id) FROM events e JOIN runs r USING (run_id) "
        "WHERE r.name = 'bad' AND e.event_type = 'dynamo_start' AND e.compile_id = '4294967296/0'"
    ).fetchone()
    assert got == (1, 0)  # the record is kept, its frame_id is NULL
    assert (
        con.execute(
            "SELECT count(*) FROM events e JOIN runs r USING (run_id) WHERE r.name = 'bad'"
        ).fetchone()[0]
        == n_good + 1
    )
    w = con.execute(
        "SELECT line_no, kind, severity FROM ingest_errors WHERE kind = 'bad_value'"
    ).fetchall()
    assert w == [(trace.count(b"\n") + 1, "bad_value", "warning")]


def test_a_reader_that_fails_fails_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader bug no test foresaw (here: the dynamo_start handler raising on one file) costs that file's
    remaining rows and is reported; the other files of the transaction and the rows before it stay."""
    from pt2logs.readers.trace import handlers as trace_handlers

    real = trace_handlers.HANDLERS["dynamo_start"]

    def buggy(st, env, meta, cid):
        if "bad" in st.ctx.path:
            raise KeyError("a handler bug")
        real(st, env, meta, cid)

    monkeypatch.setitem(trace_handlers.HANDLERS, "dynamo_start", buggy)
    trace = (FIXTURES / "tlparse" / "simple.log").read_bytes()
    for name in ("good1", "bad", "good2"):
        (tmp_path / "in" / name).mkdir(parents=True)
        (tmp_path / "in" / name / "dedicated_log_torch_trace_rank_0_x.log").write_bytes(trace)
    res = pt2logs.ingest(
        [str(tmp_path / "in")], str(tmp_path / "wh")
    )  # in-process: the patch applies
    assert res.runs_new == 3 and res.errors == 1
    con = pt2logs.connect(str(tmp_path / "wh"))
    per_run = dict(
        con.execute(
            "SELECT r.name, count(e.run_id) FROM runs r LEFT JOIN events e USING (run_id) GROUP BY 1"
        ).fetchall()
    )
    assert per_run["good1"] == per_run["good2"] > per_run["bad"] >= 0
    ((kind, msg, path),) = con.execute("SELECT kind, message, path FROM ingest_errors").fetchall()
    assert (
        kind == "reader_failed"
        and "KeyError" in msg
        and path.endswith("bad/dedicated_log_torch_trace_rank_0_x.log")
    )

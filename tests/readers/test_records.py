"""The TORCH_TRACE record splitter: every robustness rule, and chunking independence."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.tracegen import chromium, record

from pt2logs.readers.trace.records import iter_records


def split(data: bytes, chunk: int = 1 << 20):
    errors = []
    chunks = [data[i : i + chunk] for i in range(0, len(data), chunk)] or [b""]
    recs = list(iter_records(chunks, lambda *e: errors.append(e)))
    return recs, errors


def test_records_and_payloads_roundtrip():
    text = (
        record({"str": ["/a.py", 0]})
        + chromium("dynamo", "B", 1.7e15)
        + record(
            {"artifact": {"name": "x", "encoding": "string"}}, "line1\n\tindented\n\nafter blank"
        )
    )
    recs, errors = split(text.encode())
    assert errors == []
    assert [r.line_no for r in recs] == [1, 2, 2 + recs[1].n_lines]
    assert recs[0].payload is None
    assert recs[2].payload == b"line1\n\tindented\n\nafter blank"
    assert recs[2].n_lines == 5
    assert (
        recs[1].mmdd == 1206 and recs[1].tod_us == (15 * 3600 + 18 * 60 + 15) * 1_000_000 + 925000
    )
    assert (
        recs[1].thread == 4242
        and recs[1].pathname == b"torch/_dynamo/utils.py"
        and recs[1].lineno == 1288
    )


def test_every_chunk_size_gives_the_same_records():
    text = "".join(chromium(f"span{i}", "B", 1.7e15 + i) for i in range(30)).encode()
    ref, _ = split(text)
    for chunk in (1, 2, 3, 7, 64, 100, 1000):
        recs, errors = split(text, chunk)
        assert recs == ref and errors == []


def test_garbage_inside_a_payload_resyncs_at_the_next_header():
    good = chromium("a", "B", 1.7e15)
    lines = good.splitlines(keepends=True)
    damaged = (
        "".join(lines[:3])
        + "this is garbage from another process\n"
        + "".join(lines[3:])
        + chromium("b", "E", 1.7e15 + 5)
    )
    recs, errors = split(damaged.encode())
    assert len(recs) == 2
    assert [e[0] for e in errors] == ["bad_prefix"]
    assert errors[0][1] == 4  # the garbage line's number
    assert recs[1].line_no == len(lines) + 2
    # the interrupted record keeps its payload lines (md5 still matches: garbage is not payload)
    payload = b"\n".join(x[1:] for x in good.encode().split(b"\n")[1:-1])
    assert recs[0].payload == payload


def test_file_cut_mid_record():
    text = (chromium("a", "B", 1.7e15) + chromium("b", "B", 1.7e15 + 1)).encode()
    cut = text[: len(text) - 25]
    recs, errors = split(cut)
    assert len(recs) == 2
    assert "truncated" in [e[0] for e in errors]
    full = hashlib.md5(b"x").hexdigest()
    assert recs[1].payload is not None and full  # partial payload kept


def test_orphan_payload_lines_and_empty_input():
    recs, errors = split(b"\tno header\n\tstill none\n" + chromium("a", "B", 1.0).encode())
    assert len(recs) == 1 and errors[0][0] == "orphan_payload" and errors[0][1] == 1
    assert split(b"") == ([], [])
    assert split(b"\n\n\n") == ([], [])


def test_crlf_files_are_read_as_lf():
    text = chromium("a", "B", 1.7e15)
    recs_lf, _ = split(text.encode())
    recs_crlf, errors = split(text.replace("\n", "\r\n").encode())
    assert errors == []
    assert recs_crlf[0].payload == recs_lf[0].payload
    assert recs_crlf[0].envelope == recs_lf[0].envelope


def test_payload_with_carriage_returns_and_formfeeds_kept():
    payload = "a\rb\x0cc"
    recs, errors = split(record({"artifact": {"name": "x"}}, payload).encode())
    assert errors == [] and recs[0].payload == payload.encode()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000), st.integers(min_value=1, max_value=64))
def test_arbitrary_bytes_never_raise(data, chunk):
    recs, errors = split(data, chunk)
    for r in recs:
        assert r.line_no >= 1
    for kind, _line_no, _message, excerpt in errors:
        assert isinstance(kind, str) and len(excerpt) <= 1024


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["rec", "garbage", "blank", "tab"]), max_size=30), st.integers(1, 50)
)
def test_valid_records_survive_any_interleaving(parts, chunk):
    pieces = []
    n_rec = 0
    for p in parts:
        if p == "rec":
            pieces.append(chromium("s", "B", 1.7e15 + n_rec))
            n_rec += 1
        elif p == "garbage":
            pieces.append("garbage line\n")
        elif p == "blank":
            pieces.append("\n")
        else:
            pieces.append("\tstray\n")
    recs, _ = split("".join(pieces).encode(), chunk)
    assert len(recs) == n_rec

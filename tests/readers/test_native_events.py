"""The native events loop (readers/trace_fast.py + _native/events.c) against the Python loop, its oracle.

Every table must be identical, row for row, whichever loop reads a trace; the envelopes generated here
walk the edges of the JSON subset the native pass takes (and the ones it must leave to Python).
"""

from __future__ import annotations

import hashlib
import json
import os

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pt2logs.readers.kit import FileContext
from pt2logs.readers.trace import native as records_native
from pt2logs.readers.trace.handlers import ARTIFACT_HANDLERS, HANDLERS
from pt2logs.readers.trace.records import Record
from pt2logs.readers.trace.torch_trace import read_trace

pytestmark = pytest.mark.skipif(records_native._ext is None, reason="native extension not built")


def tables(data: bytes, native: bool, chunk: int = 1 << 16, rank: int | None = None) -> tuple:
    old = os.environ.get("PT2LOGS_NATIVE")
    os.environ["PT2LOGS_NATIVE"] = "1" if native else "0"
    try:
        ctx = FileContext(file="t.log", path="/x/t.log", batch_rows=7, rank=rank)
        out: dict[str, list] = {}
        for name, batch in read_trace(
            [data[i : i + chunk] for i in range(0, len(data), chunk)], ctx
        ):
            out.setdefault(name, []).append(batch)
    finally:
        if old is None:
            del os.environ["PT2LOGS_NATIVE"]
        else:
            os.environ["PT2LOGS_NATIVE"] = old
    return {k: pa.Table.from_batches(v).to_pylist() for k, v in out.items()}, vars(ctx.stats)


def line(env: str, payload: str | None = None, t: int = 0) -> str:
    head = f"V1206 15:18:{15 + t // 1000:02d}.{t % 1000:03d}000 4242 torch/_dynamo/x.py:12] {env}\n"
    if payload is None:
        return head
    return head + "".join("\t" + ln + "\n" for ln in payload.split("\n"))


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


PAYLOAD = '{"name": "dynamo", "ts": 1733498295925105.2, "ph": "B", "args": {"compile_id": "0/0"}, "cat": "c", "tid": 0, "pid": 0}'

# envelopes on both sides of the subset: (envelope, payload)
EDGES = [
    (
        '{"chromium_event": {}, "frame_id": 0, "frame_compile_id": 0, "attempt": 0, "has_payload": "'
        + md5(PAYLOAD)
        + '"}',
        PAYLOAD,
    ),
    (
        '{"artifact": {"name": "fx_graph_cache_miss", "encoding": "json"}, "frame_id": 3, "frame_compile_id": 1, "rank": 2, "has_payload": "'
        + md5("{}")
        + '"}',
        "{}",
    ),
    (
        '{"artifact": {"name": "x\\"y", "encoding": "string"}, "has_payload": "' + md5("a") + '"}',
        "a",
    ),  # escaped name
    (
        '{"artifact": {"name": 5}, "has_payload": "' + md5("a") + '"}',
        "a",
    ),  # a name that is not a string
    ('{"artifact": {"name": null}}', None),
    ('{"artifact": "not an object"}', None),
    (
        '{"dump_file": {"name": "f.py"}, "compiled_autograd_id": 1, "frame_id": 2, "frame_compile_id": 0}',
        None,
    ),
    (
        '{"compilation_metrics": {"co_name": "f", "start_time_us": 1733498295925105, "x": 1.5e-07, "y": [1, {"z": null}], "w": true}, "frame_id": 0, "frame_compile_id": 0, "attempt": 1}',
        None,
    ),
    ('{"str": ["torch/x.py", 3]}', None),
    (
        '{"dynamo_start": {"stack": []}, "frame_id": 1, "frame_compile_id": null, "attempt": 0}',
        None,
    ),  # a null id
    ('{"dynamo_start": {}, "compiled_autograd_id": 7}', None),  # compiled autograd alone
    ('{"dynamo_start": {}, "frame_id": -1, "frame_compile_id": 0}', None),  # negative
    (
        '{"dynamo_start": {}, "frame_id": 12345678901, "frame_compile_id": 0}',
        None,
    ),  # too big for i32
    ('{"dynamo_start": {}, "frame_id": 1.0, "frame_compile_id": 0}', None),  # a float
    ('{"dynamo_start": {}, "frame_id": true}', None),
    ('{"dynamo_start": {}, "rank": 1048576}', None),  # rank out of range
    ('{"dynamo_start": {}, "rank": 3, "rank": 4}', None),  # duplicate context key
    ('{"dynamo_start": {}, "dynamo_start": {"a": 1}}', None),  # the kind twice
    ('{"dynamo_start": {}, "extra_kind": {}}', None),  # a second kind
    ('{"frame_id": 0}', None),  # no kind
    ("{}", None),
    ("[1, 2]", None),
    ('{"dynamo_start": {}} trailing', None),
    ('{"dynamo_start": {"a": 1e400}}', None),  # orjson: infinity is an error
    ('{"dynamo_start": {"a": 1e99, "b": -0, "c": 0.5E-5}}', None),
    ('{"dynamo_start": {"a": "\\u00e9 \\ud800"}}', None),  # \\u escapes: left to Python
    ('{"dynamo_start": {"a": "é"}}', None),  # non-ASCII
    ('{"dynamo_start": {"a": [1,]}}', None),  # invalid JSON
    ('{"dynamo_start": {"a": 01}}', None),
    ('  {"dynamo_start" :{ } , "attempt":0 }  ', None),  # whitespace everywhere
    ('{"chromium_event": {}, "has_payload": "0123"}', PAYLOAD),  # md5 mismatch
    (
        '{"chromium_event": {}, "has_payload": "' + md5(PAYLOAD) + '"}',
        None,
    ),  # has_payload, no payload lines
    ('{"chromium_event": {}}', PAYLOAD),  # payload without has_payload
    ('{"chromium_event": {}, "has_payload": null}', None),
    ('{"chromium_event": {}, "has_payload": 5}', PAYLOAD),
    (
        '{"some_new_kind": {"deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}',
        None,
    ),
    (
        '{"inductor_output_code": {"filename": "/tmp/x.py"}, "frame_id": 0, "frame_compile_id": 0, "has_payload": "'
        + md5("é")
        + '"}',
        "é",
    ),
]


def test_edges_same_tables():
    data = "".join(line(e, p, i) for i, (e, p) in enumerate(EDGES)).encode()
    for rank in (None, 5):
        assert tables(data, True, rank=rank) == tables(data, False, rank=rank)
        for chunk in (1, 97):
            assert tables(data, True, chunk, rank) == tables(data, False, chunk, rank)


def _recs(data: bytes) -> list[Record]:
    return [r for g in records_native.iter_record_groups([data], lambda *a: None) for r in g]


#: the EDGES the native pass takes (every other one it must leave to the Python loop)
EASY = {0, 1, 4, 5, 6, 7, 8, 9, 10, 18, 24, 29, 33, 36}


def test_the_native_pass_takes_plain_records_and_leaves_odd_ones():
    ext = records_native._ext
    for k, (env, payload) in enumerate(EDGES):
        recs = _recs(line(env, payload).encode())
        stop, n, cols, handled, *_ = ext.event_columns(
            recs, 0, HANDLERS, ARTIFACT_HANDLERS, None, None, 0, 0, 10**6, 1 << 40
        )
        assert (stop, n) == ((1, 1) if k in EASY else (0, 0)), env
        if k in EASY:
            assert len(cols) == 21
            kind = next(iter(json.loads(env)))
            meta = json.loads(env)[kind]
            name = meta.get("name") if kind == "artifact" and isinstance(meta, dict) else None
            has_handler = bool(ARTIFACT_HANDLERS.get(name) or HANDLERS.get(kind))
            assert [h[2] for h in handled] == ([kind] if has_handler else []), env


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
_json = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        _text,
    ),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(_text, kids, max_size=3),
    max_leaves=8,
)

_ints = st.one_of(
    st.integers(-3, 3),
    st.integers(0, 2**40),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False),
    _text,
)


@st.composite
def envelopes(draw) -> tuple[str, str | None]:
    kind = draw(
        st.sampled_from(
            [
                "chromium_event",
                "artifact",
                "dynamo_start",
                "str",
                "compilation_metrics",
                "novel",
                "rank",
            ]
        )
    )
    meta = draw(
        st.one_of(
            _json,
            st.fixed_dictionaries(
                {
                    "name": st.one_of(
                        st.sampled_from(["fx_graph_cache_miss", "recompile_reasons", "x"]), _json
                    )
                }
            ),
        )
    )
    env: dict = {kind: meta}
    for k in draw(
        st.lists(
            st.sampled_from(
                ["frame_id", "frame_compile_id", "attempt", "compiled_autograd_id", "rank"]
            ),
            max_size=5,
            unique=True,
        )
    ):
        env[k] = draw(_ints)
    payload = draw(
        st.one_of(
            st.none(),
            st.text(st.characters(blacklist_categories=("Cs",)), max_size=40).map(
                lambda s: s.replace("\r", "")
            ),
        )
    )
    if payload is not None and draw(st.booleans()):
        env["has_payload"] = (
            md5(payload) if draw(st.booleans()) else draw(st.one_of(_text, st.none()))
        )
    text = json.dumps(
        env,
        ensure_ascii=draw(st.booleans()),
        separators=draw(st.sampled_from([(", ", ": "), (",", ":")])),
    )
    return text, payload


@settings(max_examples=150, deadline=None)
@given(st.lists(envelopes(), min_size=1, max_size=12), st.sampled_from([None, 0, 3]))
def test_generated_envelopes_same_tables(items, rank):
    data = "".join(line(e, p, i) for i, (e, p) in enumerate(items)).encode()
    assert tables(data, True, rank=rank) == tables(data, False, rank=rank)


def test_mutated_real_traces_same_tables():
    """Seeded, time-bounded differential fuzz over whole tables: real traces (tlparse's test logs, the H100
    traces, the samples) damaged by the mutation fuzzer — odd numbers in envelopes, 30-digit thread ids,
    flipped bytes, CRLF, cut files (PT2LOGS_NATIVE_FUZZ_SECONDS bounds it)."""
    from tests.readers.test_native_records import mutation_fuzz

    def same(data: bytes, chunk: int) -> None:
        assert tables(data, True, chunk) == tables(data, False, chunk)

    mutation_fuzz(same, 7, 12_000, 2048)

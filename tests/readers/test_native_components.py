"""A cache key's components made natively (``_native/components.c`` ``split_components``) against
:func:`pt2logs.analysis.cache_keys.parse_components`, its oracle: the same ``cache_key_components`` and
``cache_events`` tables, row for row, on every real trace with cache artifacts and on generated lists that
walk the rules' edges; the C function's rules tested directly; ``PT2LOGS_NATIVE=0`` never calls it.
"""

from __future__ import annotations

import json
import os
import random
import time

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.readers.test_native_events import line, md5, tables
from tests.readers.test_native_records import trace_files

from pt2logs.analysis.cache_keys import is_backward, parse_components, split_line
from pt2logs.readers.trace import native as records_native

pytestmark = pytest.mark.skipif(records_native._ext is None, reason="native extension not built")

split = records_native._ext.split_components if records_native._ext is not None else None
H = "abcdefghijklmnop0123"  # a 20-character hash


def columns(got: tuple) -> tuple:
    """The C function's answer as Python values: (names, hashes, values, backward)."""
    n, *bufs, backward = got
    cols = [
        pa.Array.from_buffers(
            pa.string(), n, [None, pa.py_buffer(bufs[2 * i]), pa.py_buffer(bufs[2 * i + 1])]
        ).to_pylist()
        for i in range(3)
    ]
    assert all(len(c) == n for c in cols)
    return (*cols, backward)


def oracle(items: list) -> tuple:
    comps = parse_components(items)
    first = next((c.value for c in comps if c.name == "fx_kwargs[is_backward]"), None)
    return [c.name for c in comps], [c.hash for c in comps], [c.value for c in comps], first


_ASCII_WS = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"


def python_only(items: list) -> bool:
    """Whether the list needs Python's rules: a continuation line, or a name whose edge after stripping
    ASCII whitespace is not ASCII (str.strip's Unicode whitespace), or text that is not UTF-8."""
    seen = False
    for it in items:
        if type(it) is not str:
            continue
        try:
            it.encode("utf-8")
        except UnicodeEncodeError:
            return True
        s = split_line(it)
        if s is None:
            if seen:
                return True
            continue
        seen = True
        close = it.find("] ", 17)
        name = it[close + 2 : it.find(":", close + 2)].strip(_ASCII_WS)
        if name and (not name[0].isascii() or not name[-1].isascii()):
            return True
    return False


def same(items: list) -> None:
    got = split(items)
    assert (got is None) == python_only(items), items
    if got is not None:
        assert columns(got) == oracle(items)
        b = got[-1]
        assert (None if b is None else b.strip() == "True") == is_backward(parse_components(items))


# -- the C function's rules, one by one ---------------------------------------------------------------
def test_hash_lengths_and_letters():
    for n, ok in ((15, False), (16, True), (64, True), (65, False)):
        item = f"[{'a1' * 40}"[: n + 1] + "] name: v"
        assert (split([item])[0] == 1) is ok, n
        same([item])
    for bad in (
        f"[{H.upper()}] n: v",
        f"[{H[:-1]}_] n: v",
        f"[{H}]n: v",
        f"{H}] n: v",
        f" [{H}] n: v",
    ):
        assert split([bad])[0] == 0, bad
        same([bad])
    assert columns(split([f"[{'7' * 16}] n: v"])) == (["n"], ["7" * 16], ["v"], None)  # digits only


def test_name_and_value_split():
    assert columns(split([f"[{H}] gm: a: b"])) == (
        ["gm"],
        [H],
        ["a: b"],
        None,
    )  # the name ends at the first colon
    assert columns(split([f"[{H}]  x  :  v "])) == (
        ["x"],
        [H],
        [" v "],
        None,
    )  # name stripped, one space dropped
    assert columns(split([f"[{H}] x:v\n\nw"])) == (["x"], [H], ["v\n\nw"], None)
    assert columns(split([f"[{H}] \t:"])) == ([""], [H], [""], None)  # a blank name strips to ""
    for bad in (
        f"[{H}] no colon",
        f"[{H}] :v",
        f"[{H}] a\nb: v",
        "[" + "a" * 20 + ":",
        "[" + "a" * 20 + ": x",
    ):
        assert split([bad])[0] == 0, bad
        same([bad])


def test_unicode_edges_of_names_go_to_python():
    for name in ("\u3000x", "x\xa0", " \x85x ", "é", "x é"):
        assert split([f"[{H}] {name}: v"]) is None, name
        same([f"[{H}] {name}: v"])
    assert columns(split([f"[{H}] a é b : v"]))[0] == ["a é b"]  # non-ASCII inside: taken


def test_values_cut_at_1024_code_points():
    for n in (1023, 1024, 1025, 3000):
        for ch in ("a", "é", "€", "😀"):
            value = ch * n
            names, _, values, _ = columns(split([f"[{H}] v: {value}"]))
            assert values == [value if n <= 1024 else ch * 1024 + "…"], (n, ch)
            same([f"[{H}] v: {value}"])
    mixed = "a€" * 600  # 1,200 code points, 2,400 bytes
    assert columns(split([f"[{H}] v: {mixed}"]))[2] == [mixed[:1024] + "…"]


def test_skipped_items_continuations_and_surrogates():
    comp = f"[{H}] a: 1"
    assert columns(split([])) == ([], [], [], None)
    assert columns(split([1, None, {"x": 1}, ["y"], 2.5, True, "", "preamble", comp])) == (
        ["a"],
        [H],
        ["1"],
        None,
    )
    assert split([comp, "a continuation line"]) is None  # torch 2.3-2.4: Python joins it
    assert split([comp, ""]) is None
    assert split([comp, 5, comp])[0] == 2
    assert (
        split(["\ud800", comp]) is None and split([comp, f"[{H}] b: \udc80"]) is None
    )  # not UTF-8: Python
    for items in ([comp, "more"], ["pre", comp, "x", comp]):
        same(items)
    with pytest.raises(TypeError):
        split(("not", "a list"))


def test_is_backward_is_the_first_one():
    items = [f"[{H}] fx_kwargs[is_backward]:  True ", f"[{H}] fx_kwargs[is_backward]: False"]
    assert columns(split(items))[3] == " True " and is_backward(parse_components(items)) is True
    assert split([f"[{H}]  fx_kwargs[is_backward] : False"])[-1] == "False"
    assert split([f"[{H}] fx_kwargs[is_backward]x: True"])[-1] is None


def test_python_only_when_native_is_off(monkeypatch):
    items = [f"[{H}] a: 1"]
    assert (
        records_native.split_components(items) is not None
        and records_native.split_components("x") is None
    )
    monkeypatch.setenv("PT2LOGS_NATIVE", "0")
    assert records_native.split_components(items) is None
    monkeypatch.setenv("PT2LOGS_NATIVE", "1")
    monkeypatch.setattr(records_native, "_ext", None)  # not built
    assert records_native.split_components(items) is None


# -- generated lists ----------------------------------------------------------------------------------
_HASH = st.builds(
    lambda n, s, up: (s * 70)[:n].upper() if up else (s * 70)[:n],
    st.sampled_from([15, 16, 17, 40, 64, 65]),
    st.text("0123456789abcxyz", min_size=1, max_size=8),
    st.booleans(),
)
_NAME = st.text(
    st.sampled_from(
        list("ab_[]()0.é") + [" ", "\t", "\n", "\x1c", "\xa0", "\u3000", "\x85", "\u2028"]
    ),
    max_size=12,
)
_VALUE = st.one_of(
    st.text(st.sampled_from(list("ab :\n") + ["é", "€", "😀"]), max_size=20),
    st.builds(
        lambda n, c, tail: c * n + tail,
        st.integers(1020, 1028),
        st.sampled_from(["a", "é", "€", "😀"]),
        st.sampled_from(["", "é", "x"]),
    ),
)
_ITEM = st.one_of(
    st.builds(
        lambda h, name, sep, v: f"[{h}] {name}{sep}{v}",
        _HASH,
        _NAME,
        st.sampled_from([": ", ":", ":  ", "", " "]),
        _VALUE,
    ),
    st.builds(
        lambda v: f"[{H}] fx_kwargs[is_backward]: {v}",
        st.sampled_from(["True", " True", "False", "x"]),
    ),
    st.text(max_size=10),  # continuation / preamble lines
    st.one_of(st.integers(), st.none(), st.booleans(), st.just({"a": 1}), st.just(["x"])),
)


@settings(max_examples=600, deadline=None)
@given(st.lists(_ITEM, max_size=8))
def test_generated_lists_same_as_the_oracle(items):
    same(items)


def _trace(lookups: list[list]) -> bytes:
    out = []
    for i, items in enumerate(lookups):
        name = (
            "fx_graph_cache_miss",
            "fx_graph_cache_hit",
            "aotautograd_cache_miss",
            "fx_graph_cache_hash",
        )[i % 4]
        payload = json.dumps(
            {"key": f"k{i}", "components": items, "cache_state": "miss"}, ensure_ascii=i % 2 == 0
        )
        env = json.dumps(
            {
                "artifact": {"name": name, "encoding": "json"},
                "frame_id": i,
                "frame_compile_id": 0,
                "attempt": 0,
                "has_payload": md5(payload),
            }
        )
        out.append(line(env, payload, i))
    return "".join(out).encode()


def _check_trace(data: bytes, chunk: int = 1 << 16) -> dict:
    """Every table (and the file's statistics) the same, natively and in Python; the native tables."""
    nat, nat_stats = tables(data, True, chunk)
    py, py_stats = tables(data, False, chunk)
    assert nat.keys() == py.keys()
    for name in nat:
        assert nat[name] == py[name], name
    assert nat_stats == py_stats
    return nat


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_ITEM, max_size=6), min_size=1, max_size=6))
def test_generated_traces_same_tables(lookups):
    _check_trace(_trace(lookups))


def test_a_trace_mixing_native_and_python_lookups_keeps_line_order():
    comp = [f"[{H}] gm: g", f"[{H}] fx_kwargs[is_backward]: True", f"[{H}] inductor_config[x]: 1"]
    lookups = [
        comp,
        comp + ["continued"],
        [],
        ["pre", *comp],
        comp[:1] + [f"[{H}] \u3000x: 1"],
        comp,
    ] * 3
    t = _check_trace(_trace(lookups))
    rows = t["cache_key_components"]
    assert [r["line_no"] for r in rows] == sorted(r["line_no"] for r in rows)
    assert {(r["component"], r["kind"]) for r in rows} == {
        ("gm", "graph"),
        ("fx_kwargs[is_backward]", "config"),
        ("inductor_config[x]", "config"),
        ("x", "other"),
    }
    assert [r["n_components"] for r in t["cache_events"]] == [3, 3, 0, 3, 2, 3] * 3
    assert [r["is_backward"] for r in t["cache_events"]] == [True, True, None, True, None, True] * 3


# -- real traces ---------------------------------------------------------------------------------------
def test_every_fixture_trace_with_cache_keys_same_tables():
    seen = 0
    for p in trace_files():
        data = p.read_bytes()
        if b"_cache_" not in data:
            continue
        for chunk in (1 << 20, 4093):
            t = _check_trace(data, chunk)
            seen += len(t.get("cache_key_components", ()))
    assert seen > 10_000


def test_real_component_lists_are_taken_natively():
    """The real lists (torch 2.5+) are taken by the C pass, with the oracle's values."""
    taken = fallback = 0
    for p in trace_files():
        for ln in p.read_text(errors="replace").splitlines():
            if ln.startswith("\t{") and '"components"' in ln:
                items = json.loads(ln[1:]).get("components")
                if isinstance(items, list):
                    same(items)
                    if split(items) is None:
                        fallback += 1
                    else:
                        taken += 1
    assert taken > 100 and fallback <= taken // 20, (taken, fallback)


_POOL = [
    ":",
    "]",
    "] ",
    "[",
    " ",
    "\t",
    "\n",
    "\x1c",
    "\xa0",
    "\u3000",
    "é",
    "€",
    "😀",
    "A",
    "0",
    "\ud800",
    "",
]


def _mutate(items: list, rng: random.Random) -> list:
    out = list(items)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(out))
        it = out[i]
        op = rng.randrange(5)
        if op == 0 and isinstance(it, str) and it:  # a character replaced, inserted or removed
            k = rng.randrange(len(it) + 1)
            out[i] = it[:k] + rng.choice(_POOL) + it[k + rng.randrange(2) :]
        elif op == 1 and isinstance(it, str):  # cut, or lengthened around 1,024 code points
            out[i] = (
                it[: rng.randrange(len(it) + 1)]
                if rng.random() < 0.5
                else it + rng.choice(_POOL[-8:]) * rng.randint(1000, 1030)
            )
        elif op == 2:  # a continuation line or a non-text item
            out.insert(i, rng.choice(["more", "", 7, None, {"a": 1}]))
        elif op == 3:
            del out[i]
        else:
            out[i], out[-1] = out[-1], out[i]
        if not out:
            break
    return out


def test_mutated_real_lists_same_as_the_oracle():
    """Seeded, time-bounded (PT2LOGS_NATIVE_FUZZ_SECONDS): real lists with characters, lengths and items
    changed where the rules' edges are."""
    lists = [
        json.loads(ln[1:])["components"]
        for p in trace_files()
        for ln in p.read_text(errors="replace").splitlines()
        if ln.startswith("\t{") and '"components": [' in ln
    ]
    lists = [x[:40] for x in lists if isinstance(x, list) and x]
    rng = random.Random(int(os.environ.get("PT2LOGS_FUZZ_SEED", 11)))
    deadline = time.monotonic() + float(os.environ.get("PT2LOGS_NATIVE_FUZZ_SECONDS", 8)) / 2
    rounds = 0
    while time.monotonic() < deadline:
        same(_mutate(rng.choice(lists), rng))
        rounds += 1
    assert rounds > 100


def test_segment_pieces_arrive_as_arrow_arrays(monkeypatch):
    """The native pass's columns reach the accumulator as Arrow arrays (not per-item Python objects)."""
    from pt2logs.readers.kit import FileContext
    from pt2logs.readers.segment_rows import SegmentRows
    from pt2logs.readers.trace.torch_trace import read_trace

    seen: list = []
    orig = SegmentRows.add_piece

    def spy(self, shared, n, columns):
        seen.append({k: type(v) for k, v in columns.items()})
        orig(self, shared, n, columns)

    monkeypatch.setattr(SegmentRows, "add_piece", spy)
    monkeypatch.setenv("PT2LOGS_NATIVE", "1")
    list(read_trace([_trace([[f"[{H}] gm: g"]])], FileContext(file="t.log", path="/x/t.log")))
    assert len(seen) == 1 and set(seen[0]) == {"component", "hash", "value"}
    assert all(issubclass(t, pa.Array) for t in seen[0].values())


def test_native_off_never_calls_the_c_pass(monkeypatch):
    def boom(items):
        raise AssertionError("the C pass ran with PT2LOGS_NATIVE=0")

    monkeypatch.setattr(records_native._ext, "split_components", boom)
    t, _ = tables(_trace([[f"[{H}] gm: g", f"[{H}] a: 1"]]), False)
    assert [r["component"] for r in t["cache_key_components"]] == ["gm", "a"]

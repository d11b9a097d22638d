"""Counter dumps (JSON) and compile_times() text: both layouts, every fixture, bad input."""

from __future__ import annotations

import json
import re

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import SAMPLES, fixture_path

from pt2logs.readers import detect
from pt2logs.readers.documents.counters import (
    parse_compile_times,
    read_compile_times,
    read_counters_json,
    sniff_compile_times,
    sniff_counters_json,
)
from pt2logs.readers.kit import FileContext


def read(reader, data: bytes, **ctx_kw):
    ctx = FileContext(file="c.json", path="/x/c.json", **ctx_kw)
    out: dict[str, list[pa.RecordBatch]] = {}
    for name, batch in reader([data[i : i + 997] for i in range(0, len(data), 997)] or [b""], ctx):
        out.setdefault(name, []).append(batch)
    return {k: pa.Table.from_batches(v).to_pylist() for k, v in out.items()}, ctx.stats


def naive_times(text: str) -> list[tuple[str, list[float]]]:
    """An independent reading of one table: rows after the header, split on the widest space run or the first comma."""
    out = []
    lines = text.split("\n")
    i = lines.index("TorchDynamo compilation metrics:") + 2
    if set(lines[i].strip()) <= {"-", " "}:
        i += 1
    for line in lines[i:]:
        if not line.strip() or line.startswith(("#", "{", "TorchDynamo")):
            break
        m = re.match(r"^(\S+?)(?:,\s*|\s{2,})(.*)$", line)
        out.append((m.group(1), [float(v) for v in m.group(2).split(",")]))
    return out


COUNTER_FILES = [
    ("gpu", s, "counters.json")
    for s in ("graph_breaks", "compile_failure", "cudagraphs", "recompile_causes", "train_loop")
]


@pytest.mark.parametrize("parts", COUNTER_FILES, ids=lambda p: p[1])
def test_gpu_counter_dumps_with_tabulate_layout(parts):
    path = fixture_path(*parts)
    doc = json.loads(path.read_text())
    assert detect(path.read_bytes()[:65536], path.name).name == "counters_json"
    t, stats = read(read_counters_json, path.read_bytes())
    counters = {
        (r["category"], r["name"]): r["value"]
        for r in t["counters"]
        if r["category"] != "dump_info"
    }
    assert counters == {(g, k): v for g, c in doc["counters"].items() for k, v in c.items()}
    info = {
        r["name"]: (r["value"], r["text"]) for r in t["counters"] if r["category"] == "dump_info"
    }
    assert (
        info["scenario"] == (None, parts[1])
        and info["torch"][1] == doc["torch"]
        and "compile_times" not in info
    )
    assert stats.torch_version == doc["torch"] and stats.errors == stats.warnings == 0
    times = t["compile_times"]
    assert {r["layout"] for r in times} == {"tabulate"} and {r["source_key"] for r in times} == {
        "compile_times"
    }
    expected = naive_times(doc["compile_times"])
    got: dict[str, list[float]] = {}
    for r in sorted(times, key=lambda r: (r["line_no"], r["call_index"])):
        got.setdefault(r["function"], []).append(r["seconds"])
    assert got == dict(expected)


def test_graph_break_keys_are_kept_whole():
    t, _ = read(
        read_counters_json, fixture_path("gpu", "graph_breaks", "counters.json").read_bytes()
    )
    gb = [r["name"] for r in t["counters"] if r["category"] == "graph_break"]
    assert gb and any("\n" in k and "Explanation:" in k for k in gb)


@pytest.mark.parametrize(
    "scenario", ["recompiles", "graph_breaks", "train_step", "compile_failure", "ddp_2rank"]
)
def test_sample_counter_dumps_plain_layout_and_rank(scenario):
    for path in sorted((SAMPLES / scenario).glob("counters*.json")):
        doc = json.loads(path.read_text())
        t, stats = read(read_counters_json, path.read_bytes())
        assert stats.errors == 0
        rank = doc.get("rank")
        assert {r["rank"] for r in t["counters"]} == {rank}
        assert {r["layout"] for r in t["compile_times"]} == {"plain"}
        keys = {
            k
            for k, v in doc.items()
            if isinstance(v, str) and v.startswith("TorchDynamo compilation metrics:")
        }
        assert {r["source_key"] for r in t["compile_times"]} == keys
        for key in keys:
            got: dict[str, list[float]] = {}
            for r in sorted(
                (r for r in t["compile_times"] if r["source_key"] == key),
                key=lambda r: (r["line_no"], r["call_index"]),
            ):
                got.setdefault(r["function"], []).append(r["seconds"])
            assert got == dict(naive_times(doc[key])), (path, key)
    if scenario == "train_step":
        # compile_times() is cleared by torch._dynamo.reset(): the dump keeps the text from before it too
        assert {"compile_times", "compile_times_before_reset"} == {
            r["source_key"] for r in t["compile_times"]
        }


def test_bare_dump_fixture():
    path = fixture_path("torch_logs", "counters.json")
    assert detect(path.read_bytes()[:65536], path.name).name == "counters_json"
    t, stats = read(read_counters_json, path.read_bytes())
    doc = json.loads(path.read_text())
    assert len(t["counters"]) == sum(len(v) for v in doc.values()) and stats.errors == 0
    assert "compile_times" not in t
    limit = [
        r
        for r in t["counters"]
        if r["category"] == "unimplemented"
        and r["name"].startswith("Dynamo recompile limit exceeded")
    ]
    assert len(limit) == 1 and limit[0]["value"] >= 1


def test_standalone_compile_times_text_with_three_tables():
    path = fixture_path("torch_logs", "compile_times.txt")
    assert detect(path.read_bytes()[:65536], path.name).name == "compile_times"
    t, stats = read(read_compile_times, path.read_bytes())
    assert stats.errors == stats.warnings == 0
    rows = t["compile_times"]
    # aggregate=False, aggregate=True, and repr="csv" dumped as JSON
    assert sorted({(r["table_index"], r["layout"]) for r in rows}) == [
        (0, "plain"),
        (1, "plain"),
        (2, "csv"),
    ]
    text = path.read_text()
    first = {r["function"]: [] for r in rows if r["table_index"] == 0}
    for r in sorted((r for r in rows if r["table_index"] == 0), key=lambda r: r["call_index"]):
        first[r["function"]].append(r["seconds"])
    assert first == dict(naive_times(text))
    assert all(r["call_index"] == 0 for r in rows if r["table_index"] == 1)
    # the line number points at the function's row in the file
    r = next(
        r
        for r in rows
        if r["table_index"] == 0 and r["function"] == "compile_attempt_0" and r["call_index"] == 0
    )
    assert text.split("\n")[r["line_no"] - 1].startswith("compile_attempt_0, ")
    csv = {r["function"]: r["seconds"] for r in rows if r["table_index"] == 2}
    agg = {r["function"]: r["seconds"] for r in rows if r["table_index"] == 1}
    assert csv.keys() == agg.keys() and all(abs(csv[k] - agg[k]) < 1e-3 for k in csv)


def test_sniffers_do_not_claim_other_json_or_text():
    for p in (
        fixture_path("torch_logs", "compilation_metrics.json"),
        fixture_path("torch_logs", "COMMANDS.txt"),
        fixture_path("torch_logs", "recompiles.txt"),
        SAMPLES / "README.md",
    ):
        head = p.read_bytes()[:65536]
        assert not sniff_counters_json(head, p.name) and not sniff_compile_times(head, p.name), p
    assert not sniff_counters_json(b'{"[0/0]": {"artifacts": []}}', "compile_directory.json")
    assert sniff_counters_json(
        b'{\n "stats": {"unique_graphs": 1},\n "frames": {"total": 1}}', "x.json"
    )


def test_pt2logs_run_dump_with_nulls():
    """`pt2logs run` writes "rank": null and "compile_times": null when they are unknown."""
    data = json.dumps(
        {
            "counters": {"stats": {"unique_graphs": 2}},
            "compile_times": None,
            "rank": None,
            "pid": 4242,
        }
    ).encode()
    t, stats = read(read_counters_json, data, rank=3)
    rows = {(r["category"], r["name"]): (r["value"], r["text"], r["rank"]) for r in t["counters"]}
    assert rows == {
        ("stats", "unique_graphs"): (2, None, 3),
        ("dump_info", "compile_times"): (None, None, 3),
        ("dump_info", "rank"): (None, None, 3),
        ("dump_info", "pid"): (4242, None, 3),
    }
    assert stats.errors == 0


def test_bad_input_becomes_error_rows():
    t, stats = read(read_counters_json, b'{"counters": {"stats": {"x": 1}')
    assert stats.errors == 1 and t["ingest_errors"][0]["kind"] == "bad_json"
    t, stats = read(read_counters_json, b"[1, 2]")
    assert t["ingest_errors"][0]["kind"] == "not_an_object"
    t, stats = read(read_counters_json, b'{"counters": {"stats": {"x": 1.5, "y": "z"}, "bad": 3}}')
    rows = {(r["category"], r["name"]): (r["value"], r["text"]) for r in t["counters"]}
    assert (
        rows[("stats", "x")] == (None, "1.5")
        and rows[("stats", "y")] == (None, "z")
        and rows[("dump_info", "bad")] == (3, None)
    )
    assert stats.warnings == 3  # two non-integer counters, one group that is not an object
    t, stats = read(
        read_compile_times,
        b"TorchDynamo compilation metrics:\nFunction, Runtimes (s)\nf, 1.0, oops\ng, 2.5\n",
    )
    assert [(r["function"], r["seconds"]) for r in t["compile_times"]] == [("g", 2.5)]
    assert (
        t["ingest_errors"][0]["kind"] == "bad_compile_times_row"
        and t["ingest_errors"][0]["line_no"] == 3
    )
    t, stats = read(read_compile_times, b"no table here\n")
    assert stats.errors == 1 and t["ingest_errors"][0]["kind"] == "no_table"


def test_tabulate_layout_without_tabulate_installed():
    text = (
        "TorchDynamo compilation metrics:\nFunction                 Runtimes (s)\n-----------------------  --------------\n"
        "_compile.compile_inner   0.5, 1.25\nOutputGraph.call_user_compiler  0.1\n"
    )
    (table,) = parse_compile_times(text)
    assert table.layout == "tabulate"
    assert [(f, v) for _, f, v in table.rows] == [
        ("_compile.compile_inner", [0.5, 1.25]),
        ("OutputGraph.call_user_compiler", [0.1]),
    ]


@settings(max_examples=200, deadline=None)
@given(
    st.binary(max_size=300),
    st.sampled_from(
        [
            b"",
            b"TorchDynamo compilation metrics:\nFunction, Runtimes (s)\n",
            b'{"counters": {',
            b"TorchDynamo compilation metrics:\nFunction  Runtimes (s)\n---  ---\n",
        ]
    ),
)
def test_arbitrary_bytes_never_raise(data, prefix):
    for reader in (read_counters_json, read_compile_times):
        read(reader, prefix + data)

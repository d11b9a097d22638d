"""A strict check of the Chrome Trace Event Format (JSON object form), for the files
``pt2logs export perfetto`` writes.

The real checker, Perfetto's trace processor (``pip install perfetto``), needs its
``trace_processor_shell`` binary, which it downloads on first use: there is no internet here, so
tests/test_trace_export.py runs it only when the binary is given (``PT2LOGS_TRACE_PROCESSOR`` or on
PATH). This module is the check that always runs: a JSON Schema (jsonschema, Draft 2020-12) of
every event kind the exporter writes, stricter than the format (no unknown keys), plus what a schema
cannot say: the JSON is strict (no NaN or Infinity), every process and thread that has events is
named, metadata is not repeated, and every span of a thread nests in the ones it starts inside.

Format: "Trace Event Format" (Google, 2016): an object with ``traceEvents``; ``ph`` ``X`` (complete:
``ts`` + ``dur``), ``i`` (instant, scope ``s`` g/p/t), ``M`` (metadata: process_name, thread_name,
process_sort_index, thread_sort_index, process_labels); ``ts``/``dur`` in µs; ``pid``/``tid`` integers.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import jsonschema

_BASE = {
    "name": {"type": "string", "minLength": 1},
    "cat": {"type": "string"},
    "pid": {"type": "integer", "minimum": 0},
    "tid": {"type": "integer", "minimum": 0},
    "ts": {"type": "number", "minimum": 0},
    "args": {"type": "object"},
}
_META_ARGS = {
    "process_name": {
        "properties": {"name": {"type": "string", "minLength": 1}},
        "required": ["name"],
    },
    "thread_name": {
        "properties": {"name": {"type": "string", "minLength": 1}},
        "required": ["name"],
    },
    "process_sort_index": {
        "properties": {"sort_index": {"type": "integer"}},
        "required": ["sort_index"],
    },
    "thread_sort_index": {
        "properties": {"sort_index": {"type": "integer"}},
        "required": ["sort_index"],
    },
    "process_labels": {"properties": {"labels": {"type": "string"}}, "required": ["labels"]},
}


def _meta(name: str) -> dict[str, Any]:
    thread = name.startswith("thread_")
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "name": {"const": name},
            "ph": {"const": "M"},
            "pid": _BASE["pid"],
            **({"tid": _BASE["tid"]} if thread else {}),
            "args": {"type": "object", "additionalProperties": False, **_META_ARGS[name]},
        },
        "required": ["name", "ph", "pid", "args"] + (["tid"] if thread else []),
    }


SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["traceEvents"],
    "properties": {
        "traceEvents": {
            "type": "array",
            "items": {
                "oneOf": [
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            **_BASE,
                            "ph": {"const": "X"},
                            "dur": {"type": "number", "minimum": 0},
                        },
                        "required": ["name", "ph", "ts", "dur", "pid", "tid"],
                    },
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            **_BASE,
                            "ph": {"const": "i"},
                            "s": {"enum": ["g", "p", "t"]},
                        },
                        "required": ["name", "ph", "ts", "pid", "tid", "s"],
                    },
                    *[_meta(n) for n in _META_ARGS],
                ]
            },
        },
        "displayTimeUnit": {"enum": ["ms", "ns"]},
        "otherData": {"type": "object"},
    },
}


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (the trace viewers reject it)")


def load_strict(data: bytes) -> dict[str, Any]:
    """The document, parsed as strict JSON (NaN / Infinity refused)."""
    return json.loads(data, parse_constant=_no_constants)


def check_trace(data: bytes) -> dict[str, Any]:
    """Check a Chrome trace document; returns it parsed, raises AssertionError / ValidationError."""
    doc = load_strict(data)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    events = doc["traceEvents"]
    meta = [(e["name"], e["pid"], e.get("tid")) for e in events if e["ph"] == "M"]
    assert len(meta) == len(set(meta)), "a process or thread has its metadata twice"
    named_p = {p for n, p, _ in meta if n == "process_name"}
    named_t = {(p, t) for n, p, t in meta if n == "thread_name"}
    for e in events:
        if e["ph"] != "M":
            assert e["pid"] in named_p, f"process {e['pid']} has events but no process_name"
            assert (e["pid"], e["tid"]) in named_t, (
                f"thread {e['pid']}/{e['tid']} has events but no thread_name"
            )
    check_nesting(events)
    return doc


def check_nesting(events: list[dict[str, Any]]) -> int:
    """Every span (X) of a thread nests: a span that starts inside another ends inside it too (no
    partial overlap). Returns the deepest nesting seen."""
    by_thread: dict[tuple[int, int], list[tuple[float, float]]] = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            by_thread[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    deepest = 0
    for key, spans in by_thread.items():
        stack: list[tuple[float, float]] = []
        for start, end in sorted(spans, key=lambda s: (s[0], -(s[1] - s[0]))):
            while stack and stack[-1][1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1][1], (
                f"thread {key}: span [{start}, {end}] starts inside [{stack[-1][0]}, {stack[-1][1]}] and ends after it"
            )
            stack.append((start, end))
            deepest = max(deepest, len(stack))
    return deepest

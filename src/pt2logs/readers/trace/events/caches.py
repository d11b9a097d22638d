"""Cache lookups from a trace: ``cache_events`` and the key's components (``cache_key_components``).

The artifacts, as torch writes them (JSON payloads):

* ``fx_graph_cache_{hit,miss,bypass}`` — torch >= 2.6, torch/_inductor/compile_fx.py (FX graph
  cache; ``key``, ``components``, ``cache_state``, ``cache_bypass_reason``, ``time_saved_ns``,
  ``cache_status_detailed``), and torch/_functorch/_aot_autograd/aot_autograd_result.py for the
  graphs inside an AOTAutograd cache entry; ``fx_graph_bundled_cache_hit`` (always a hit) there too.
* ``fx_graph_cache_hash`` — torch 2.3-2.5, torch/_inductor/codecache.py ``compiled_fx_graph_hash`` /
  ``FxGraphCache.load``: ``key`` and ``components`` (2.3-2.4: the debug text split into lines, no
  ``cache_state``; 2.5: with ``cache_state``).
* ``aotautograd_cache_{hit,miss,bypass}`` — torch >= 2.6, torch/_functorch/_aot_autograd/
  autograd_cache.py (``cache_bypass_reason``, ``cache_bypass_exception_type``, ``time_saved_ms``);
  ``aotautograd_cache_hash`` (2.6 nightlies, with ``cache_state``).
* ``dynamo_cache_bypass`` (torch/_dynamo/package.py: a backend missing from a package) and
  ``precompile_cache_bypass`` (torch/_dynamo/output_graph.py: ``_reason``).

Components: :mod:`pt2logs.analysis.cache_keys`.
"""

from __future__ import annotations

from typing import Any

import orjson
import pyarrow as pa

from pt2logs.analysis.cache_keys import component_kind, is_backward, parse_components
from pt2logs.readers.trace import native as records_native
from pt2logs.readers.trace.events.compile_facts import emit_code
from pt2logs.readers.trace.state import TraceState

OUTCOMES = ("hit", "miss", "bypass")


def _record(
    st: TraceState, cid: str | None, cache: str, outcome: str | None, d: dict[str, Any]
) -> None:
    saved = d.get("time_saved_ms")
    if saved is None and d.get("time_saved_ns") is not None:
        saved = d["time_saved_ns"] / 1e6
    reason = d.get("cache_bypass_reason") or d.get("reason") or d.get("_reason")
    if reason is None and outcome != "hit":
        reason = d.get("cache_status_detailed")
    n, columns, backward = _components(d.get("components"))
    key = d.get("key")
    key = None if key is None else str(key)
    detail = {k: v for k, v in d.items() if k != "components"}
    st.add(
        "cache_events",
        {
            "source": "trace",
            "compile_id": cid,
            "cache": cache,
            "outcome": outcome,
            "key": key,
            "reason": None if reason is None else str(reason),
            "time_saved_ms": saved,
            "detail": orjson.dumps(detail, default=str).decode(),
            "n_components": n,
            "is_backward": backward,
        },
    )
    st.add_many(
        "cache_key_components",
        {"source": "trace", "compile_id": cid, "cache": cache, "key": key},
        columns,
        n,
        _KIND,
    )


#: a component's kind, from its name (once per distinct name and batch)
_KIND = {"kind": ("component", component_kind)}


def _components(items: Any) -> tuple[int, dict[str, Any], bool | None]:
    """The components' count, columns (``component``, ``hash``, ``value``) and ``is_backward``: made
    natively when :func:`~pt2logs.readers.trace.native.split_components` can, else by
    :func:`~pt2logs.analysis.cache_keys.parse_components` (same values)."""
    got = records_native.split_components(items)
    if got is None:
        comps = parse_components(items)
        return (
            len(comps),
            {
                "component": [c.name for c in comps],
                "hash": [c.hash for c in comps],
                "value": [c.value for c in comps],
            },
            is_backward(comps),
        )
    n, *bufs, backward = got
    cols = {
        name: pa.Array.from_buffers(
            pa.string(), n, [None, pa.py_buffer(bufs[2 * i]), pa.py_buffer(bufs[2 * i + 1])]
        )
        for i, name in enumerate(("component", "hash", "value"))
    }
    return n, cols, None if backward is None else backward.strip() == "True"


def cache_artifact(cache: str, outcome: str | None) -> Any:
    """A handler for one artifact name; ``outcome`` None: the payload's ``cache_state`` says."""

    def handler(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
        d = st.json_payload()
        d = d if isinstance(d, dict) else {}
        out = outcome
        if out is None:
            state = d.get("cache_state")
            out = str(state) if state in OUTCOMES else None
        _record(st, cid, cache, out, d)
        if cache == "fx_graph":
            emit_code(st, st.scratch(cid), None if out is None else out == "hit")

    return handler

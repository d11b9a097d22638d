"""The handler table of the trace engine, stated once: which handler takes which record.

A record's event key (``dynamo_start``, ``chromium_event``...) picks its handler in :data:`HANDLERS`; an
``artifact`` record's name picks it in :data:`ARTIFACT_HANDLERS`. Kinds in :data:`KNOWN_PLAIN` are kept
in ``events`` only and are not "unknown". After a ``compilation_metrics`` record's row, the
:data:`METRICS_HOOKS` emit the rows that waited for it; at the end of a file the :data:`FINISHERS`
emit what is left. Both loops (:mod:`.loop`, :mod:`.fast`, and through it the C events pass) read these
tables; nothing is registered at import time, and the order here is the order they run in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pt2logs.readers.trace import kept_raw
from pt2logs.readers.trace.events import (
    basics,
    caches,
    codegen,
    collectives,
    compile_facts,
    metrics,
    phases,
    shapes,
    vllm,
)
from pt2logs.readers.trace.state import TraceState

Handler = Callable[[TraceState, dict, Any, "str | None"], None]
#: called with (state, kind, metadata, compile_id) after each compilation_metrics record's row
MetricsHook = Callable[[TraceState, str, dict, "str | None"], None]

#: run after each metrics record, in order: recompiles, graph breaks, failures, guards, kernels; vLLM compiles
METRICS_HOOKS: tuple[MetricsHook, ...] = (
    compile_facts.on_metrics,
    vllm.on_metrics,
    shapes.on_metrics,
    codegen.on_metrics,
)
#: the end of a file, in order: open spans closed, then the rows of compiles whose metrics never came
FINISHERS: tuple[Callable[[TraceState], None], ...] = (
    phases.finish,
    compile_facts.finish,
    vllm.finish,
    codegen.finish,
)


def graph_dump(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    """A ``graph_dump`` record: vLLM's split graph (:mod:`.events.vllm`), AOTInductor's code (:mod:`.events.codegen`)."""
    vllm.graph_dump(st, env, meta, cid)
    codegen.aot_dump(st, env, meta, cid)


def compilation_metrics(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    """The ``compilation_metrics`` row (:mod:`.events.metrics`), then :data:`METRICS_HOOKS`."""
    done = metrics.compilation_metrics(st, env, meta, cid)
    if done is not None:
        kind, compile_id = done
        for hook in METRICS_HOOKS:
            hook(st, kind, meta, compile_id)


def create_symbol(st: TraceState, env: dict, meta: Any, cid: str | None) -> None:
    """A symbol: the compile's ``guards`` row lists it, and it is a ``dynamic_shapes`` row."""
    compile_facts.create_symbol(st, env, meta, cid)
    shapes.create_symbol(st, env, meta, cid)


#: event key -> handler
HANDLERS: dict[str, Handler] = {
    "str": basics.string_table,
    "dynamo_start": basics.dynamo_start,
    "chromium_event": phases.chromium_event,
    "dynamo_cpp_guards_str": compile_facts.cpp_guards,
    "create_symbol": create_symbol,
    "inductor_output_code": compile_facts.output_code,
    "graph_dump": graph_dump,
    "exported_program": codegen.exported_program,
    **{kind: compilation_metrics for kind in metrics.KINDS},
    # dynamic shapes (issue 35)
    "create_unbacked_symbol": shapes.create_unbacked_symbol,
    "symbolic_shape_specialization": shapes.specialization,
    "guard_added": shapes.guard_added,
    "guard_added_fast": shapes.guard_added_fast,
    "propagate_real_tensors": shapes.propagate_real_tensors,
    "guard_on_data_dependent_error": shapes.data_dependent_error,
}

#: artifact name -> handler (for ``artifact`` records)
ARTIFACT_HANDLERS: dict[str, Handler] = {
    "torch_version": basics.torch_version,
    "fx_graph_runnable": basics.repro_version,
    "recompile_reasons": compile_facts.recompile_reasons,
    "dynamo_graph_break_reason": compile_facts.graph_break,
    "vllm_compilation_config": vllm.compilation_config,
    "vllm_piecewise_compile_start": vllm.piecewise_compile_start,
    **{
        f"{cache}_cache_{outcome}": caches.cache_artifact(cache, outcome)
        for outcome in caches.OUTCOMES
        for cache in ("fx_graph", "aotautograd")
    },
    "fx_graph_bundled_cache_hit": caches.cache_artifact("fx_graph", "hit"),
    "fx_graph_cache_hash": caches.cache_artifact("fx_graph", None),
    "aotautograd_cache_hash": caches.cache_artifact("aotautograd", None),
    "dynamo_cache_bypass": caches.cache_artifact("dynamo", "bypass"),
    "precompile_cache_bypass": caches.cache_artifact("precompile", "bypass"),
    "inductor_provenance_tracking_node_mappings": codegen.node_mappings,
    "inductor_provenance_tracking_kernel_stack_traces": codegen.kernel_stack_traces,
    "inductor_collective_schedule": collectives.schedule,
    "inductor_runtime_and_tensor_meta": collectives.runtime_and_tensor_meta,
    "graph_execution": collectives.graph_execution,
    "inductor_spmd_graph_mismatch": collectives.spmd_mismatch,
}

#: event kinds kept raw on purpose (not "unknown" even without a handler): :mod:`.kept_raw`, with the reasons
KNOWN_PLAIN: frozenset[str] = kept_raw.PLAIN

_CM = ("compilation_metrics", "recompiles", "graph_breaks", "failures", "guards", "kernels")
#: the tables each handler feeds (by the handler's module and name): what the `event_coverage` query says each
#: kind or artifact feeds; a test checks every handler has its entry and each table exists
FEEDS: dict[str, tuple[str, ...]] = {
    "basics.string_table": (),
    "basics.dynamo_start": (),
    "basics.torch_version": ("runs",),
    "basics.repro_version": ("runs",),
    "phases.chromium_event": ("compile_phases",),
    "compile_facts.cpp_guards": ("guards",),
    "handlers.create_symbol": ("guards", "dynamic_shapes"),
    "compile_facts.output_code": ("kernels", "extern_calls"),
    "compile_facts.recompile_reasons": ("recompiles",),
    "compile_facts.graph_break": ("graph_breaks",),
    "handlers.graph_dump": ("vllm_compiles", "aot_compiles", "kernels"),
    "codegen.exported_program": ("aot_compiles",),
    "codegen.node_mappings": ("kernel_provenance",),
    "codegen.kernel_stack_traces": ("kernel_provenance",),
    **{
        f"collectives.{h.__name__}": ("collective_schedule",)
        for h in (
            collectives.schedule,
            collectives.runtime_and_tensor_meta,
            collectives.graph_execution,
            collectives.spmd_mismatch,
        )
    },
    "vllm.compilation_config": ("vllm_compiles", "vllm_piecewise"),
    "vllm.piecewise_compile_start": ("vllm_piecewise",),
    "handlers.compilation_metrics": _CM
    + ("extern_calls", "vllm_compiles", "vllm_piecewise", "cudagraph_skips", "aot_compiles"),
    "caches.cache_artifact.<locals>.handler": ("cache_events", "cache_key_components"),
    **{
        f"shapes.{h.__name__}": ("dynamic_shapes",)
        for h in (
            shapes.create_unbacked_symbol,
            shapes.specialization,
            shapes.guard_added,
            shapes.guard_added_fast,
            shapes.propagate_real_tensors,
            shapes.data_dependent_error,
        )
    },
}


def feeds(h: Handler) -> tuple[str, ...]:
    """The tables handler ``h`` feeds (:data:`FEEDS`)."""
    return FEEDS[f"{h.__module__.rsplit('.', 1)[-1]}.{h.__qualname__}"]


def coverage_rows() -> list[tuple[str, str | None, str, str | None]]:
    """(event kind, artifact name or pattern or None, the tables it feeds joined by ', ', why it is kept raw)
    for every handled kind and artifact (why: None), then every one kept raw on purpose (tables: ''): the
    registry the `event_coverage` query reads (the `event_feeds()` macro)."""
    rows = [(k, None, ", ".join(feeds(h)), None) for k, h in HANDLERS.items()]
    rows += [("artifact", n, ", ".join(feeds(h)), None) for n, h in ARTIFACT_HANDLERS.items()]
    rows += [(k, None, "", why) for k, why in kept_raw.KINDS.items() if k not in HANDLERS]
    rows += [
        ("artifact", n, "", why)
        for n, why in kept_raw.ARTIFACTS.items()
        if n not in ARTIFACT_HANDLERS
    ]
    return rows


#: handlers that read only the payload (never the envelope or its metadata): the native loop does not
#: parse the envelope for them and passes None
ENVELOPE_FREE: frozenset[Handler] = frozenset({phases.chromium_event})


def finish_file(st: TraceState) -> None:
    """The end of a file: each of :data:`FINISHERS`."""
    for fn in FINISHERS:
        fn(st)

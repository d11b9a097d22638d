"""The trace engine's handler table is one explicit table (readers/trace/handlers.py): the handler modules
register nothing when they are imported, so what runs, and in which order, does not depend on import order."""

from __future__ import annotations

import ast

from tests.conftest import ROOT

from pt2logs.readers.trace import handlers
from pt2logs.readers.trace.events import codegen, compile_facts, shapes, vllm

EVENTS = ROOT / "src" / "pt2logs" / "readers" / "trace" / "events"


def test_handler_modules_do_nothing_when_imported():
    for path in sorted(EVENTS.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            assert not isinstance(node, (ast.Expr, ast.For, ast.If)) or (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            ), (path.name, node.lineno)
            for d in getattr(node, "decorator_list", []):
                assert not isinstance(d, ast.Call), (
                    path.name,
                    node.lineno,
                )  # no registering decorators


def test_the_table_names_every_handler_once_and_the_hooks_in_order():
    assert (
        compile_facts.on_metrics,
        vllm.on_metrics,
        shapes.on_metrics,
        codegen.on_metrics,
    ) == handlers.METRICS_HOOKS
    assert all(
        callable(h) for h in (*handlers.HANDLERS.values(), *handlers.ARTIFACT_HANDLERS.values())
    )
    assert {"compilation_metrics", "chromium_event", "dynamo_start", "str"} <= set(
        handlers.HANDLERS
    )
    assert {"dynamo_graph_break_reason", "fx_graph_cache_hit", "aotautograd_cache_miss"} <= set(
        handlers.ARTIFACT_HANDLERS
    )
    assert {
        "inductor_provenance_tracking_node_mappings",
        "inductor_provenance_tracking_kernel_stack_traces",
        "inductor_collective_schedule",
        "inductor_runtime_and_tensor_meta",
        "graph_execution",
        "inductor_spmd_graph_mismatch",
    } <= set(handlers.ARTIFACT_HANDLERS)

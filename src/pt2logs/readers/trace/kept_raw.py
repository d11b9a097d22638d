"""What pt2logs keeps only raw, on purpose, and why: every TORCH_TRACE event kind and artifact name
torch writes that no handler in :mod:`pt2logs.readers.trace.handlers` interprets.

Every record is an ``events`` row whatever its kind (nothing is dropped); a kind here answers no
question beyond that. tests/test_event_coverage.py reads torch's own source (every
``trace_structured`` / ``trace_structured_artifact`` call) and fails on a name that is neither handled
nor listed here, so a new torch's new records are noticed. docs/events.md shows these lists
(``python -m pt2logs.docgen``). Names torch builds at run time are listed as the pattern the source
gives (``*`` for the part known only at run time).
"""

from __future__ import annotations

_AOT_DUMP = (
    "a `graph_dump` record's name, not an artifact: the graph_dump handler reads it "
    "(AOTInductor's code: aot_compiles, kernels)"
)
_GRAPH = "an FX graph's text at a stage boundary: read from events by bundle and serve (graph views, FX diff)"
_WRAPPER = "AOTAutograd's generated wrapper code / metadata (codegen text for torch developers)"
_PASS_GRAPH = "an FX graph's text around an inductor / functorch pass (for the pass's developers)"
_COMMS = (
    "a comms-scheduling pass's diagnostic (bucketing, overlap, estimates): for the pass's developers; "
    "the schedule itself is inductor_collective_schedule"
)
_TENSOR_META = "fake-tensor metadata (tensors, storages, sources) for tlparse's tensor views; large, no question asks it"
_OLDER = "written by other torch versions only; kept raw"

#: event kind -> why it is kept raw
KINDS: dict[str, str] = {
    "describe_tensor": _TENSOR_META,
    "describe_storage": _TENSOR_META,
    "describe_source": _TENSOR_META,
    "dynamo_output_graph": _GRAPH,
    "aot_forward_graph": _GRAPH,
    "aot_backward_graph": _GRAPH,
    "aot_joint_graph": _GRAPH,
    "aot_inference_graph": _GRAPH,
    "inductor_pre_grad_graph": _GRAPH,
    "inductor_post_grad_graph": _GRAPH,
    "aot_forward_graph_pre_saved_tensors_hooks": _GRAPH,
    "aot_backward_graph_pre_saved_tensors_hooks": _GRAPH,
    "aot_forward_graph_pre_assert_saved_tensors_hooks": _GRAPH,
    "aot_backward_graph_pre_assert_saved_tensors_hooks": _GRAPH,
    "aot_saved_tensors_hooks_pack *": _GRAPH,
    "aot_saved_tensors_hooks_unpack *": _GRAPH,
    "compiled_autograd_graph": _GRAPH,
    "optimize_ddp_split_graph": "DDPOptimizer's split graph text (the buckets it made); no question asks it yet",
    "optimize_ddp_split_child": "one DDPOptimizer submodule's name; no question asks it yet",
    "dump_file": "the source of generated code (eval_with_key) that stack frames point at",
    "link": "a URL to an external profile (Meta's manifold); nothing to read here",
    "dynamo_guards": "the guards as structured JSON; the guard text (dynamo_cpp_guards_str) feeds `guards`",
    "expression_created": "one per symbolic expression (TORCH_DTRACE, hundreds a compile): tlparse's provenance graph",
    "propagate_real_tensors_provenance": "TORCH_DTRACE's copy of propagate_real_tensors (which feeds `dynamic_shapes`)",
    "missing_fake_kernel": "an op without a fake kernel (TORCH_DTRACE): the failure it causes is in `failures`",
    "mismatched_fake_kernel": "a fake kernel disagreeing with the real one (TORCH_DTRACE): a diagnostic for op authors",
    "export": "draft export's start marker (payload `start!`); the export is exported_program",
    "guard_failure_stack_trace": _OLDER,
    "sym_node_run_concurrent": _OLDER,
    "unbacked_symbol_replaced": _OLDER,
    "aot_graphs_metadata": _OLDER,
    "freezing_frame": _OLDER,
}

#: artifact name (or pattern) -> why it is kept raw
ARTIFACTS: dict[str, str] = {
    # AOTInductor's code: the names of `graph_dump` records, not artifacts
    "inductor_aot_wrapper_code": _AOT_DUMP,
    "inductor_aot_kernel_code": _AOT_DUMP,
    "inductor_aot_header_code": _AOT_DUMP,
    # graphs around passes
    "before_pre_grad_graph": _PASS_GRAPH,
    "after_pre_grad_graph": _PASS_GRAPH,
    "before_joint_graph": _PASS_GRAPH,
    "after_joint_graph": _PASS_GRAPH,
    "before_post_grad_graph": _PASS_GRAPH,
    "inductor_post_grad_graph": _PASS_GRAPH,
    "before_activation_quantization_fwd_aten_pass": _PASS_GRAPH,
    "after_activation_quantization_fwd_aten_pass": _PASS_GRAPH,
    "before_activation_quantization_bwd_aten_pass": _PASS_GRAPH,
    "after_activation_quantization_bwd_aten_pass": _PASS_GRAPH,
    "aot_inference_graph_after_hop_passes": _PASS_GRAPH,
    "aot_saved_tensors_hooks_graphs": _PASS_GRAPH,
    "compiled_autograd_graph_pre_reordering": _PASS_GRAPH,
    "invoke_subgraph_backward_duplicate": _PASS_GRAPH,
    "overlap_scheduling_graph_before": _PASS_GRAPH,
    "overlap_scheduling_graph_after": _PASS_GRAPH,
    "make_fx_fail_partial": _PASS_GRAPH + "; the failure is in `failures`",
    "min_cut_information": "the partitioner's min-cut decision (for its developers)",
    "min_cut_failed_fx_graph": "the partitioner's failed min-cut graph; the failure is in `failures`",
    "min_cut_failed_svg": "the partitioner's failed min-cut graph as SVG",
    "min_cut_failed_edge_list": "the partitioner's failed min-cut edges",
    "optimus_*": "an inductor group/batch fusion pass's graph after it ran (pass developers)",
    "cff_*": "an inductor group/batch fusion pass's graph after it ran (pass developers)",
    "*_pre_grad": "a pattern-matcher pass's graph after it ran (pass developers)",
    "*_post_grad": "a pattern-matcher pass's graph after it ran (pass developers)",
    "*_fused": "the memory planner's fused-buffer dump (inductor developers)",
    "*_ORIGINAL_BYTECODE": "a frame's bytecode before dynamo (torch developers)",
    "*_MODIFIED_BYTECODE": "a frame's bytecode after dynamo (torch developers)",
    "inductor_autotune_at_compile_time_code": "the generated autotuning harness (codegen text)",
    "fx_net_acc_splitter_finder_events": "the accelerator splitter's search (fx.passes, not torch.compile)",
    # AOTAutograd codegen
    **{
        n: _WRAPPER
        for n in (
            "aot_forward_graph_fw_metadata",
            "aot_forward_graph_fw_subclass_metadata",
            "backward_epilogue",
            "backward_prologue",
            "backward_subclass_unwrap",
            "backward_subclass_wrapper",
            "compiled_fn_wrapper",
            "compiled_function_backward",
            "compiled_function_forward",
            "debug_assert_wrapper",
            "dedup_wrapper",
            "effect_tokens_wrapper",
            "functionalized_rng_wrapper",
            "mutation_epilogue",
            "output_alias_wrapper",
            "runtime_wrapper_orchestration",
            "subclass_wrapper",
            "synthetic_base_wrapper",
            "torch._functorch.config",
        )
    },
    # comms passes
    **{
        n: _COMMS
        for n in (
            "aot_joint_graph_sync_decision_cross_ranks",
            "compiler_collective",
            "fx_bucketing_passes_all_gather_buckets",
            "fx_bucketing_passes_reduce_scatter_buckets",
            "fx_collectives_analytical_estimation",
            "fx_collectives_estimations_after_overlap_bucketing",
            "fx_collectives_node_runtime_estimation",
            "fx_compute_nodes_runtime_estimation",
            "inductor_fx_passes_overlap_bucketing",
            "inductor_overlap_cyclic_extra_deps",
            "pge_profile_vs_analytical",
            "post_decomp_comms",
            "pre_decomp_comms",
            "pre_bucketing_collective_sizes",
            "pre_bucketing_collective_sizes_after",
            "pre_bucketing_fsdp_collectives",
            "reorder_communication_preserving_peak_memory",
            "reorder_communication_preserving_peak_memory_ITERATIVE_RECOMPUTE_ERROR",
            "scheduler_nodes_before_comm_overlap",
            "sink_waits_iterative_ITERATIVE_RECOMPUTE_ERROR",
            "sink_waits_iterative_info",
        )
    },
    # failures and caches beyond the basics
    "dynamo_error": "the traceback of a failed frame compile, again: the compile's metrics carry the failure "
    "(fail_type, fail_reason, user frame, exception_stack_trace) → `failures` (its stack column)",
    "fx_interpreter_error": "the FX node and graph an interpreted graph failed at (text); the compile's failure is in `failures`",
    "eager_compile_backwards_failure": "not yet interpreted: a backward compiled eagerly failed (lazy backward falls "
    "back); no metrics record says so",
    "aotautograd_cache_pickle_failure": "not yet interpreted: an AOTAutograd entry could not be pickled (error, field); "
    "the bypass it causes is an aotautograd_cache_bypass → `cache_events`",
    "dynamo_cache_entries": "the precompile cache's entries (JSON) at save time; no question asks them yet",
    "dynamo_cache_exception": "not yet interpreted: an exception while saving a precompile cache entry",
    "fx_graph_cache_*": "compile_fx's f-string over cache_info['cache_state']: the states codecache.py sets "
    "(hit, miss, bypass) are each interpreted → `cache_events`; another state is kept raw",
    "fx_graph_cache_disabled": "never written: compile_fx writes fx_graph_cache_{state} only when a cache was looked "
    "up (hit, miss, bypass: `cache_events`)",
    "get_local_code_state": "PGO's code state read (automatic dynamic shapes' saved sizes): not yet interpreted",
    "put_local_code_state": "PGO's code state written: not yet interpreted",
    "get_remote_code_state": "PGO's code state read from the remote cache: not yet interpreted",
    "put_remote_code_state": "PGO's code state written to the remote cache: not yet interpreted",
    "get_extra_remote_code_state": "PGO's extra code state read: not yet interpreted",
    "put_extra_remote_code_state": "PGO's extra code state written: not yet interpreted",
    "compiled_autograd_compile_reasons": "not yet interpreted: why compiled autograd compiled again",
    "triton_kernel_info": "a user-defined Triton kernel's source (async_compile); no question asks it yet",
    "dynamo_side_effects": "the side effects dynamo replays after the graph (codegen text)",
    "compile_worker_status": "torch 2.14's compile-worker pool status: not yet interpreted",
    "compile_worker_sidecar_death": "torch 2.14: the compile-worker pool's sidecar died (its exit status): not yet "
    "interpreted; the compile that waited on it fails in `failures`",
    **{
        f"flex_gemm_{n}": "torch 2.14's flex GEMM template: its problem, candidates and choice (autotuning "
        "diagnostics for template developers)"
        for n in (
            "problem",
            "analysis",
            "analysis_details",
            "config_candidates",
            "lowering_plan",
            "generated_epilogue",
            "selection",
        )
    },
    "native_dsl_compile": "torch 2.14: a native-DSL kernel's compile (torch/_native/instrumentation.py): kernel "
    "source for its developers",
}

#: event kinds not "unknown" in the ingest statistics: everything kept raw on purpose
PLAIN: frozenset[str] = frozenset(KINDS)

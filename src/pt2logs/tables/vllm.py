"""vLLM tables: what vLLM says about compiling a model, from its log lines and its TORCH_TRACE artifacts.

``vllm_log_events`` is filled by :mod:`pt2logs.readers.lines.vllm_lines` (a line reader chained into every
stderr/stdout capture); ``vllm_compiles`` and ``vllm_piecewise`` by
:mod:`pt2logs.readers.trace.events.vllm` (the ``vllm_*`` artifacts vLLM ≥ 0.17 writes through
``trace_structured``). See docs/vllm.md for the wordings read and the vLLM versions that print them.
"""

from pt2logs.tables.schema import table

LOG_EVENTS = table(
    "vllm_log_events",
    version=2,
    group="vllm",
    grain="vLLM log line about compiling, its cache, CUDA graphs or the engine",
    doc="""The lines of vLLM's own logger that time a cold start: Dynamo bytecode transform, one compile
    per compile range (or shape), loads from vLLM's compile cache, torch.compile's total, CUDA graph
    capture, the cache directory, the engine's model and version. Each line stays a (foreign) `log_lines`
    row too; lines of vLLM that say nothing of this are only there.""",
    columns="""
    file            str        the capture (relative to the run root)
    line_no         i64        1-based line
    ts              ts         the line's time (vLLM's `%m-%d %H:%M:%S`: local time taken as UTC, the year from the file's mtime)
    process         str        the process prefix's name: `VllmWorker rank=0`, `EngineCore_DP0`, `Worker_TP1`, `RayWorkerWrapper`, `MainProcess`, ...
    pid             i64        the process prefix's pid
    level           str        INFO, WARNING, DEBUG, ...
    logger_file     str        the file vLLM's formatter names (`backends.py`, `v1/worker/gpu_model_runner.py` at DEBUG)
    logger_line     i32        its line
    tag             str        the compile tag vLLM ≥ 0.33 puts before the message (`[backbone]`, an encoder's tag); NULL before
    kind            str        dynamo_transform, compile_range, cache_load, cache_store, compile_total, compile_start, warmup_run, cudagraph_capture, cache_dir, cache_disabled, cache_saved, cache_factors, aot_load, aot_save, aot_load_failed, engine_init, engine_config
    compile_range   str        what was compiled or loaded: `(1, 8192)` (a compile range), `general shape`, `dynamic shape`, `shape 4` (older vLLM: one size)
    range_start     i64        first size of the compile range (a single shape: that size); NULL for general / dynamic shape
    range_end       i64        last size of the compile range, inclusive
    dynamic         bool       the compile or load covers every size (`general shape`, `dynamic shape`, `dynamic compile range`)
    seconds         f64        the time the line gives (compile, load, total, capture, transform, warmup, engine init); NULL when it gives none (vLLM 0.6.4 and 0.7.x wordings)
    gib             f64        memory the line gives (CUDA graph capture: GiB taken)
    path            str        cache directory, AOT artifact path
    model           str        the model (engine_config: the `model=` of the engine's config)
    vllm_version    str        vLLM's version (engine_config: `Initializing a V1 LLM engine (vX)`)
    reason          str        why an AOT artifact did not load (aot_load_failed: `Kernel index 1 not found in id_to_kernel`, `Source code has changed since the last compilation.`)
    compile_seconds f64        engine_init: the compilation part of the engine's start (`(compilation: 55.52 s)`, vLLM 0.33)
    message         str        the message as logged (after the prefix)
    repeat          i32        Ray's log deduplication (`[repeated 7x across cluster]`): the line stands for this many lines of other processes besides the one printed before (a timing of 8 workers, not one); NULL when not deduplicated
    """,
)

COMPILES = table(
    "vllm_compiles",
    version=1,
    group="vllm",
    grain="vLLM backend compile (one vllm_compilation_config artifact)",
    doc="""Each time vLLM's backend compiled a model graph (a Dynamo compile handed to `VllmBackend`), as its
    TORCH_TRACE says: the compilation config it logged (`vllm_compilation_config`), how many subgraphs the
    piecewise split made (`vllm_piecewise_split_graph`), and the piecewise compiles that followed.""",
    columns="""
    file            str        the trace file
    line_no         i64        line of the vllm_compilation_config record
    ts              ts         its time
    compile_id      str        the Dynamo compile it belongs to
    model           str        config: model
    prefix          str        config: prefix (the compile tag, e.g. backbone)
    mode            str        config: mode (CompilationMode.VLLM_COMPILE, ...)
    backend         str        config: backend (inductor, eager)
    cudagraph_mode  str        config: cudagraph_mode
    splitting_ops   str        config: splitting_ops (comma-separated)
    compile_sizes   str        config: compile_sizes
    compile_ranges  str        config: compile_ranges_endpoints (vLLM ≥ 0.20) or compile_ranges_split_points (0.17)
    inductor_graph_partition bool config: use_inductor_graph_partition
    dynamic_shapes_type str    config: dynamic_shapes_type
    n_subgraphs     i32        submodules in the piecewise split graph (splitting ops included); NULL without the graph dump
    n_piecewise     i32        piecewise compiles logged for this compile (vllm_piecewise_compile_start)
    n_ranges        i32        distinct compile ranges among them
    piecewise_s     f64        sum of their durations (see vllm_piecewise.seconds)
    config          json       the artifact's payload as logged
    """,
)

PIECEWISE = table(
    "vllm_piecewise",
    version=1,
    group="vllm",
    grain="piecewise compile of one subgraph for one compile range (vllm_piecewise_compile_start)",
    doc="""Every `vllm_piecewise_compile_start` artifact: which subgraph (`submod_N`) was compiled for
    which compile range. vLLM logs the start only; `seconds` runs to the next piecewise start of the same
    compile, the last one to the compile's `compilation_metrics` (the Dynamo compile that holds them ends
    right after vLLM's backend returns). A start logged on a warm start is a load from vLLM's cache.""",
    columns="""
    file            str        the trace file
    line_no         i64        line of the record
    ts              ts         when the piecewise compile started
    compile_id      str        the Dynamo compile it belongs to
    piecewise_index i32        the subgraph's index among the compiled ones (piecewise_index)
    submod_name     str        the split graph's submodule, e.g. submod_0
    total_piecewise i32        compiled subgraphs of this graph (total_piecewise_compiles)
    range_start     i64        compile_range_start
    range_end       i64        compile_range_end (inclusive)
    single_size     bool       is_single_size: a compile for one size (a cudagraph or compile size)
    cudagraph_size  bool       is_cudagraph_capture_size
    seconds         f64        until the next piecewise start of the compile, or its end; NULL when neither was logged
    """,
)

"""Tables derived from compile events: one table per question users ask.

Filled by the trace reader's handlers (``source='trace'``) and by the text
readers (``source='torch_logs'``, ``'compile_debug'``, ``'spyre'``).
"""

from pt2logs.tables.schema import table

#: the identity of a compiled function's file (docs: docs/architecture.md, "Identities")
_CO_FILE = """
    co_file         str         co_filename's identity: package-relative for installed packages and torch (torch/nn/modules/module.py), <stdlib>/… for the standard library, relative to the run's root (runs.user_root) for user code in the views (absolute in the Parquet files); a function's identity is co_file + co_name
    co_file_kind    str         user, library, stdlib or other (code with no file: <eval_with_key>, <string>)
"""
#: the user frame of an event (graph break, failure): the innermost frame of its stack in user code
_FRAME = """
    frame_file      str         the user frame's file: relative to the run's root (runs.user_root) in the views, absolute in the Parquet files
    frame_line      i32         the user frame's line
    frame_func      str         the user frame's function
"""
_RELATIVE = {"co_file": "co_file_kind", "frame_file": None}

#: the integers of the compile id ([!A/]F/C), stored so SQL never parses the text (readers/identity_cols.py fills
#: them in every row of FRAME_ID_TABLES; files older than these columns: filled by the same rule in Python,
#: query/frame_fill.py on reads, store/frame_upgrade.py by `pt2logs compact`)
FRAME_IDS = """
    frame_id        i32         F of the compile id [!A/]F/C: the frame (a code object, numbered in the order its process met them); NULL without one (a compile id !A alone, or none)
    frame_compile_id i32        C of the compile id: which compile of that frame (0 the first)
"""
FRAME_ID_TABLES = ("compilation_metrics", "recompiles", "graph_breaks", "failures", "cache_events")

_WHERE = """
    source          str   where the row came from: trace, torch_logs, tlparse_dir, compile_debug, spyre
    file            str   the file (relative to the run root)
    line_no         i64   line of the record the row comes from
    compile_id      str   compile id (F/C or !A/F/C); NULL when unknown
"""

RECOMPILES = table(
    "recompiles",
    version=3,
    run_relative={"co_file": "co_file_kind"},
    group="compile",
    grain="recompilation (a compile of a frame that was compiled before), or a refusal by the recompile limit",
    doc="Why did it recompile? The failed guard, classified into a small taxonomy of causes (see docs/recompile_causes.md).",
    columns=_WHERE
    + """
    ts              ts          when it happened
    co_name         str         function that was recompiled
    co_filename     str         its file
    co_firstlineno  i32         its first line
    reason          str         the failed guard text that triggered it (first one)
    all_reasons     list<str>   every failed guard reason reported, newest cache entry first
    cause           str         taxonomy: shape_mismatch, ndim_mismatch, dtype_mismatch, device_mismatch, requires_grad_mismatch, python_value_changed, type_or_id_changed, dispatch_key_or_grad_mode, global_or_config_changed, dynamic_shape_guard, recompile_limit_hit, other
    guard_subject   str         the variable the guard was on (x, k, self.training, ...)
    prev_compile_id str         the compile whose guard failed
    is_limit_hit    bool        the recompile limit (config.recompile_limit / cache_size_limit) was reached: dynamo gave up on the frame
    guard_kind      str         the failed guard's kind: size, stride, ndim, dtype, requires_grad, dispatch_keys, device, equals, not_equals, is, truth, len_equals, type_id, obj_id, isinstance, hasattr, alias, global_state, config, backend, symbolic, recompile_limit, other, ...
    guard_source    str         the guarded expression, L['x'] written x as torch >= 2.6 prints it (x.size()[1], offset, self._modules['attn'].processor); a guard's identity is guard_kind + guard_source
    guard_expected  str         the value the guard expected (8, Float, True; the condition of a symbolic guard)
    guard_actual    str         the value it saw, when the text says (16, Double)
    """
    + _CO_FILE
    + FRAME_IDS,
)

GRAPH_BREAKS = table(
    "graph_breaks",
    version=3,
    group="compile",
    grain="graph break",
    run_relative=_RELATIVE,
    doc="""Where does it break the graph? One row per graph break reported. A site (the hotspot key,
    the same on every machine, Python and torch) is (break_key, frame_file, frame_line, lib_file,
    lib_func): the break's id, the user line that led to it, and the library function it happened in
    when that is not user code. Repeats of a break already reported for the same compile (restarts,
    duplicate-suppressed lines) are folded into `occurrences`.""",
    columns=_WHERE
    + """
    ts              ts          when it happened
    gb_id           str         stable graph-break type id (gb0170) when the log links it, else NULL
    gb_type         str         short type, e.g. Data-dependent branching
    reason          str         full reason text
    user_filename   str         user code file where the break happened
    user_lineno     i32         user code line
    explanation     str         torch's explanation, when given
    hints           list<str>   torch's hints
    co_name         str         function being compiled
    co_filename     str         its file
    co_firstlineno  i32         its first line
    occurrences     i64         times this break was reported for this compile (>= 1)
    origin          str         graph_break_artifact, restart_reason or log_line
    break_key       str         the break's stable id: gb_id, else gb_type with numbers, addresses and paths masked
    """
    + _FRAME
    + """
    lib_file        str         when the break happened in library or standard-library code (user_filename is not user code): that file, package-relative (torch/nn/parallel/distributed.py, <stdlib>/contextlib.py)
    lib_func        str         that library frame's function; lib_file + lib_func is its identity (torch's line numbers move between releases)
    lib_line        i32         that library frame's line (shown, not part of the identity)
    user_stack      list<str>   the break's user stack as logged, outermost first (file:line in function)
    """
    + _CO_FILE
    + FRAME_IDS,
)

KERNELS = table(
    "kernels",
    version=1,
    group="compile",
    grain="generated kernel (in an output-code module, or a Spyre kernel spec)",
    doc="How many kernels, of which kind? Counted from every inductor output-code payload (fresh compiles and FX-cache hits: filter on cache_hit).",
    columns=_WHERE
    + """
    kernel_name     str         kernel variable name, e.g. triton_poi_fused_add_0 / cpp_fused_relu_1 / Spyre opFuncName
    backend         str         triton, cpp, cuda, halide, rocm, multi_kernel, spyre, ...
    kind            str         pointwise, reduction, persistent_reduction, template, foreach, other (Spyre: the exUnit)
    fused_ops       list<str>   ops fused into it, from the name
    graph           str         forward, backward or inference (from the AOT id line)
    cache_hit       bool        the output code came from the FX graph cache
    num_cores       i64         Spyre: cores used
    data_format     str         Spyre: data format
    """,
)

EXTERN_CALLS = table(
    "extern_calls",
    version=1,
    group="compile",
    grain="extern kernel op per output-code module",
    doc="Calls to extern kernels (mm, addmm, convolution, ...) in generated code: call sites per op.",
    columns=_WHERE
    + """
    op              str         extern kernel op, e.g. mm, addmm, convolution
    count           i64         call sites in the module
    graph           str         forward, backward or inference
    cache_hit       bool        the output code came from the FX graph cache
    """,
)

COMPILE_PHASES = table(
    "compile_phases",
    version=1,
    group="compile",
    grain="dynamo_timed span (chromium B/E pair) or instant event",
    doc="""Where does compile time go? Nested phases from the trace's chromium events. A frame compile's
    top-level phase (`top_level AND stage = 'frame_compile'`) is its entire_frame_compile span, which equals
    compilation_metrics.entire_frame_compile_time_s; its children break that time down.""",
    columns=_WHERE
    + """
    phase           str         span name, e.g. entire_frame_compile, backend_compile, inductor_compile
    parent_phase    str         enclosing span, NULL at depth 0
    depth           i32         nesting depth among all open spans (0 = outermost)
    stage           str         frame_compile (under entire_frame_compile), backward_compile (under entire_backward_compile), wrapper (the `dynamo` span around a compile, and gc beside it), runtime (top-level spans after a compile: autotuning, cudagraphs), other
    top_level       bool        the root of its stage: entire_frame_compile / entire_backward_compile, or an outermost span; sum these per compile for its compile time
    start_us        i64         start, epoch microseconds
    duration_us     i64         duration in microseconds (0 for instants, NULL when the end is missing)
    ts              ts          start as a timestamp
    is_instant      bool        an instant ("i") event rather than a span
    category        str         chromium category (dynamo_timed)
    args            json        the begin event's args (and the end event's, merged)
    """,
)

CACHE_EVENTS = table(
    "cache_events",
    version=3,
    group="compile",
    grain="cache lookup",
    doc="""Cache behaviour: FX graph cache, AOTAutograd cache, Dynamo / precompile caches. One row per
    lookup torch logged; the key's components are in `cache_key_components` (same file and line_no).
    A lookup's identity across runs is (rank, compile_id, cache, its number among that compile's
    lookups of that cache in line order: the `lookup` column of the `cache_lookups()` macro).""",
    columns=_WHERE
    + """
    ts              ts          when it happened
    cache           str         fx_graph, aotautograd, dynamo (package bypass), precompile, or the artifact's cache name
    outcome         str         hit, miss or bypass; NULL when torch did not say (fx_graph_cache_hash of torch 2.3-2.4)
    key             str         cache key
    reason          str         bypass/miss reason when given
    time_saved_ms   f64         time saved by a hit (ms), when logged
    detail          json        the artifact's payload without its components
    n_components    i32         components of the key torch logged (0: none, e.g. AOTAutograd in torch >= 2.7 without DEBUG logging)
    is_backward     bool        the lookup was for a backward graph (fx_kwargs[is_backward]), when the key says
    """
    + FRAME_IDS,
)

CACHE_KEY_COMPONENTS = table(
    "cache_key_components",
    version=1,
    group="compile",
    grain="component of a logged cache key",
    doc="""What a cache key is made of: one row per `[hash] name: value` line torch logged with the
    lookup (FxGraphHashDetails / AOTAutogradCacheDetails). Two lookups of the same frame whose keys
    differ differ in the components whose `hash` differs (queries `cache_misses`, `cache_key_diff`).""",
    columns=_WHERE
    + """
    cache           str         the lookup's cache (cache_events.cache)
    key             str         the lookup's key
    component       str         what was hashed: gm, example_inputs[0], inductor_config[max_autotune], torch_version, system_info[hash], fx_kwargs[is_backward], ...
    kind            str         graph, inputs, config, torch_version, device, settings, custom_passes or other
    hash            str         the component's hash as logged
    value           str         the component's value as logged (at most 1,024 characters)
    """,
)

FAILURES = table(
    "failures",
    version=3,
    group="compile",
    grain="failed compile or restart",
    run_relative=_RELATIVE,
    doc="""Compiles that failed (fail_type/fail_reason) and restarts of analysis, with the user location
    when known. A failure's identity is `failure_key` (exception type + masked message); the full text
    is in `exc_message`.""",
    columns=_WHERE
    + """
    ts              ts          when it happened
    fail_type       str         exception type (NULL for a restart without failure)
    fail_reason     str         exception text or restart reason
    user_filename   str         user code file
    user_lineno     i32         user code line
    is_restart      bool        a restart of dynamo's analysis rather than a failed compile
    co_name         str         function being compiled
    co_filename     str         its file
    co_firstlineno  i32         its first line
    exc_type        str         exception type, its last dotted part (BackendCompilerFailed); NULL for a restart
    exc_message     str         the full exception message, every line (a restart: its reason)
    failure_key     str         the failure's identity: exc_type + ': ' + the message with addresses, numbers, temp paths, ids and install paths masked (at most 300 characters of it)
    """
    + _FRAME
    + """
    stack           list<str>   the exception's traceback frames (else the compile's user stack), outermost first (file:line in function)
    """
    + _CO_FILE
    + FRAME_IDS,
)

GUARDS = table(
    "guards",
    version=1,
    group="compile",
    grain="compile with guards",
    doc="Guards installed per compile and dynamic shape symbols created.",
    columns=_WHERE
    + """
    guard_count         i64        guards installed (compilation_metrics.guard_count, else counted from the guard text)
    guards              str        guard text from dynamo_cpp_guards_str
    n_guard_lines       i64        lines in the guard text
    dynamic_symbols     list<str>  symbols created (create_symbol), e.g. s0
    symbol_sources      list<str>  the source of each symbol, e.g. L['x'].size()[0]
    """,
)

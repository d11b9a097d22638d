"""Tables of dynamic shapes and CUDA graphs (issue 35): what became dynamic, what got specialized and
by which line, and why reduce-overhead fell back to eager."""

from pt2logs.tables.compile import _WHERE, FRAME_IDS
from pt2logs.tables.schema import table

_USER = """
    frame_file      str         the user line's file: relative to the run's root (runs.user_root) in the views, absolute in the Parquet files
    frame_line      i32         the user line
    frame_func      str         its function
    frame_code      str         the line's code as torch logged it, when it did
"""

DYNAMIC_SHAPES = table(
    "dynamic_shapes",
    version=1,
    group="compile",
    grain="shape event torch traced (a symbol created, a guard on symbols, a specialization, a data-dependent guard)",
    run_relative={"frame_file": None},
    doc="""Which input dims became dynamic, which got specialized, and by which user line. From the trace's
    `create_symbol`, `create_unbacked_symbol`, `symbolic_shape_specialization`, `guard_added_fast` /
    `guard_added`, `propagate_real_tensors` and `guard_on_data_dependent_error` records (torch/fx/experimental/symbolic_shapes.py;
    `guard_added`, `guard_on_data_dependent_error` and `propagate_real_tensors_provenance` only under TORCH_DTRACE).
    A specialization whose record has no user stack takes the user line of the last guard of that compile on
    its symbol (the guard that forced it).""",
    columns=_WHERE
    + """
    ts              ts          when it happened
    event           str         create_symbol, create_unbacked_symbol, specialization, guard, guard_fast, propagate_real_tensors, data_dependent_error
    symbol          str         the symbol (s0, u0; a guard or error: the first symbol its expression names)
    sources         list<str>   what the symbol stands for: L['x'].size()[0], ...
    expr            str         the guard's or error's expression (Eq(s77, 8), u0 > 3); NULL for a symbol
    value           str         the hint a symbol was created with, the value a specialization fixed, a propagated result
    value_range     str         a symbol's value range as torch printed it ([2, int_oo])
    reason          str         a specialization's reason (range_refined_to_singleton, ...); a guard's prefix (eval, runtime_assert)
    """
    + _USER,
)

CUDAGRAPH_SKIPS = table(
    "cudagraph_skips",
    version=1,
    group="compile",
    grain="CUDA-graph skip, re-recording or too-many-sizes warning torch reported",
    run_relative={"frame_file": None},
    same_fact=("event", "reason"),
    doc="""Why reduce-overhead (CUDA graphs) fell back to eager, or recorded again: from
    `compilation_metrics.cudagraph_skip_reason` (trace) and TORCH_LOGS `[__cudagraphs]` messages
    (`cudagraphs` logger: torch/_inductor/cudagraph_utils.py, cudagraph_trees.py). A compile whose
    metrics and log both say it is one row from each source in the Parquet files; the views keep the log's row
    only when the trace has no row of the same event and reason (torch 2.11 decides a skip when the graph first
    runs, after the compile's metrics were written: only the log has it).""",
    columns=_WHERE
    + """
    ts              ts          when it happened
    event           str         skip (cudagraphs not used for the graph), rerecord (a graph recorded again), rerecord_limit (a function past the re-recording limit: eager from then on), too_many_sizes (a graph recorded per input size past the warning limit)
    reason          str         torch's reason, without the "skipping cudagraphs due to" prefix and the stack trace
    reason_kind     str         mutated_inputs, cpu_device, multiple_devices, incompatible_op, dynamic_shapes, allocator, bisector, rerecord_limit, other
    function        str         the function (a re-recording) or compiled frame (co_name) it is about, when known
    count           i64         the re-recording limit, or the number of distinct sizes, when the message says
    co_name         str         the compiled function (trace: the compile's metrics)
    """
    + FRAME_IDS
    + _USER,
)

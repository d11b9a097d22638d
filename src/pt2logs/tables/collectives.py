"""The collectives of compiled graphs, per rank and in order, as inductor logs them for tlparse's
multi-rank checks (``collective_schedule``). Filled by :mod:`pt2logs.readers.trace.events.collectives`."""

from pt2logs.tables.compile import FRAME_IDS
from pt2logs.tables.schema import table

COLLECTIVE_SCHEDULE = table(
    "collective_schedule",
    version=1,
    group="compile",
    grain="op of a compiled graph's collective schedule or runtime estimate, graph run in the recorded execution order, or SPMD mismatch report",
    doc="""What does each rank's compiled graph communicate, in which order, and do the ranks agree?
    `artifact` says which record a row comes from: `inductor_collective_schedule` (the collectives and
    waits of the graph in scheduler order: torch/_inductor/debug.py log_collective_schedule, always
    logged when a graph has a collective), `inductor_runtime_and_tensor_meta` (every op of the graph with
    its estimated runtime and output shapes / strides / dtypes: only with `LOG_TLPARSE=1`,
    torch._inductor.config.log_tlparse), `graph_execution` (which compiled graph ran, in order, while
    `torch._inductor.debug.record_and_log_graph_execution_order()` was active), `inductor_spmd_graph_mismatch`
    (the report of torch's cross-rank graph check, `aten_distributed_optimizations.spmd_check`).
    Compared across ranks by the `rank_collective_checks` and `first_divergence` queries.""",
    columns="""
    source          str   where the row came from: trace
    file            str   the file (relative to the run root)
    line_no         i64   line of the record the row comes from
    compile_id      str   the graph's compile id (graph_execution: the compile id of the graph that ran)
    ts              ts    when it was logged
    artifact        str   inductor_collective_schedule, inductor_runtime_and_tensor_meta, graph_execution or inductor_spmd_graph_mismatch
    seq             i32   the op's position in its record (0 the first); the run's position for graph_execution
    op              str   the op as logged: torch.ops._c10d_functional.all_reduce_.default, op0, a kernel name; NULL for a mismatch report
    op_type         str   collective, wait or compute (runtime and tensor meta: as torch classifies it; wait_tensor is a wait)
    wait_for        i32   a wait: the seq of the collective it waits for (waits paired with the collectives in order, the first unpaired one); a collective: the seq of its wait; NULL when unpaired
    estimated_runtime_ns f64  inductor's runtime estimate for the op (runtime and tensor meta)
    outputs         json  the op's outputs: [{shape, stride, dtype}] (runtime and tensor meta)
    report          str   the SPMD mismatch report as logged
    """
    + FRAME_IDS,
)

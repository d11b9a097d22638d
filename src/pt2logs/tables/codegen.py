"""What inductor says about the code it generated, beyond ``kernels``: which user line each kernel came
from (``kernel_provenance``) and the AOTInductor / export compiles (``aot_compiles``).

Filled by the trace handlers in :mod:`pt2logs.readers.trace.events.codegen`.
"""

from pt2logs.tables.compile import FRAME_IDS
from pt2logs.tables.schema import table

_WHERE = """
    source          str   where the row came from: trace
    file            str   the file (relative to the run root)
    line_no         i64   line of the record the row comes from
    compile_id      str   compile id (F/C or !A/F/C); NULL when the compile has none (AOTInductor, export)
    ts              ts    when it was logged
"""

KERNEL_PROVENANCE = table(
    "kernel_provenance",
    version=1,
    group="compile",
    grain="generated kernel and user line it came from (a kernel with no stack trace: one row, its user columns NULL)",
    run_relative={"user_file": "user_file_kind"},
    doc="""Which user line made this kernel? From inductor's provenance tracking (`INDUCTOR_PROVENANCE=1`,
    or `TORCH_COMPILE_DEBUG=1`, or `torch._inductor.config.trace.provenance_tracking_level = 1`, torch >= 2.8):
    the `inductor_provenance_tracking_node_mappings` artifact maps each kernel of the generated code to
    the post-grad FX nodes fused into it and those to the pre-grad (Dynamo graph) nodes; the
    `inductor_provenance_tracking_kernel_stack_traces` artifact gives each kernel the user stack traces
    of its nodes. One row per kernel and user line (the innermost frame of each stack trace).""",
    columns=_WHERE
    + """
    kernel_name     str         the kernel as the generated code calls it: triton_poi_fused_add_0, cpp_fused_relu_1, extern_kernels.addmm, aoti_torch_cpu_addmm_out
    kernel_index    i32         the number after the name's colon in torch's key (`cpp_fused_relu_1:2`): the kernel's position in the generated code; NULL without one
    post_nodes      list<str>   the post-grad FX nodes fused into the kernel (mapping `cppCodeToPost`)
    pre_nodes       list<str>   the pre-grad FX nodes (the Dynamo graph's) those came from (`postToPre`)
    user_file       str         the user line's file: package-relative for library code, relative to the run's root for user code in the views (absolute in the Parquet files)
    user_file_kind  str         user, library, stdlib or other
    user_line       i32         the line
    user_func       str         the function
    user_code       str         the source line as the stack trace prints it
    n_frames        i32         frames in that stack trace (the row's frame is the innermost)
    """
    + FRAME_IDS,
)

AOT_COMPILES = table(
    "aot_compiles",
    version=1,
    group="compile",
    grain="AOTInductor compile (or torch.export's exported program) in a trace",
    doc="""What did an AOTInductor / export compile make, and did it finish? From the `graph_dump`
    records `inductor_aot_wrapper_code`, `inductor_aot_kernel_code`, `inductor_aot_header_code`
    (torch/_inductor/codecache.py AotCodeCompiler) and the `exported_program` record
    (torch.export, only under `TORCH_DTRACE`), closed by the compile's `compilation_metrics` record
    (AOT compiles have no compile id: its metrics' start and end times give its duration). A row with
    `finished` false is a compile the log ends inside.""",
    columns=_WHERE
    + """
    kind            str         aot_inductor (AOTInductor code was written) or export (an exported program only)
    exported        bool        an `exported_program` record came before it
    wrapper_path    str         the wrapper's .cpp file as logged
    wrapper_bytes   i64         bytes of the wrapper code (NULL when not logged)
    kernel_bytes    i64         bytes of the kernel code
    header_bytes    i64         bytes of the header code
    n_kernels       i32         kernels defined in the kernel code (C++ `extern "C" void` kernels, Triton `async_compile` kernels)
    compile_s       f64         its duration: its compilation_metrics' end_time_us - start_time_us; NULL when it never finished
    finished        bool        its compilation_metrics record came
    """
    + FRAME_IDS,
)

"""Torch-Spyre tables: host↔device copies, allocations, layouts, kernel launches, timing.

Filled by :mod:`pt2logs.readers.spyre` (``source='spyre'``) from TORCH_SPYRE_DEBUG /
``TORCH_LOGS=+torch_spyre`` text logs and TORCH_SPYRE_TIMING records. Kernel specs
(``sdsc_*.json``) go to the shared ``kernels`` table with ``backend='spyre'``.
See docs/spyre.md for the line shapes and how a transfer is assembled.
"""

from pt2logs.tables.schema import table

_WHERE = """
    source          str        always spyre
    file            str        the file (relative to the run root)
    line_no         i64        1-based line the row comes from (transfers: the copy's first src/dst/DCI line; timing: 1)
"""

TRANSFERS = table(
    "transfers",
    version=1,
    group="spyre",
    grain="CPU↔device copy (assembled from several log lines)",
    doc="""Every copy between host and Spyre device, assembled from the tensor info, allocation, layout,
    src/dst and DataConversionInfo lines. Half-assembled copies are kept with NULLs (see `parts`).
    Bytes are computed: host_bytes = numel(host_shape) × width(dtype), device_bytes = numel(device_size) ×
    width(device_dtype, else dtype), padding_bytes = device_bytes - host_bytes (stick = 128 bytes).""",
    columns=_WHERE
    + """
    end_line_no     i64        last line that contributed to the copy
    ts              ts         time of the first line of the copy that has one (unified logging); NULL for legacy lines
    func            str        C++ function that logged the copy: copyAsync, spyre_copy_from, copy_to_device, generate_dci
    direction       str        host_to_device, device_to_host or device_to_device; NULL when no line says
    device          str        the Spyre device, e.g. spyre:0
    dtype           str        host dtype as a torch name (float16, bfloat16, float32, ...); the raw text when unknown
    host_shape      list<i64>  shape of the host tensor
    host_strides    list<i64>  strides of the host tensor (from the tensor info line)
    host_bytes      i64        numel(host_shape) × width(dtype)
    device_size     list<i64>  device_size of the SpyreTensorLayout (the last dimension is the stick)
    device_dtype    str        device data format, e.g. DataFormats.SEN169_FP16
    device_bytes    i64        numel(device_size) × width(device_dtype), width(dtype) when the device dtype is unknown
    padding_bytes   i64        device_bytes - host_bytes: what the stick padding (and format change) costs
    padded_elements i64        numel(device_size) - numel(host_shape): padding in elements, independent of widths
    stride_map      list<i64>  stride_map of the layout
    dim_map         list<i64>  dim_map of the layout (layouts before Apr 2026)
    alloc_bytes     i64        bytes of the device allocation made for the copy's destination
    address         str        device address of that allocation, when logged (region:offset)
    tensor_name     str        the tensor's name when a Python line named it (spyre.inductor.model_utils)
    shape_from      str        where host_shape came from: tensor_info, model_utils, dci, illustrative
    dci_name        str        DataConversionInfo dsName_
    dci             json       DataConversionInfo fields: dsName_, isHostToSen_, dataformat_src_/dst_, input/output_shape_, dcsi_
    parts           list<str>  lines that were found: tensor_info, alloc, layout, src, dst, dci, status
    complete        bool       direction, host_bytes and device_bytes are all known
    status          str        the illustrative format's result word (OK); NULL otherwise
    alloc_line_no   i64        line of the allocation (join spyre_allocations)
    layout_line_no  i64        line of the layout (join spyre_layouts)
    n_lines         i32        log lines that contributed
    """,
)

ALLOCATIONS = table(
    "spyre_allocations",
    version=1,
    group="spyre",
    grain="device allocation (an `allocating N (bytes)` line, with its `allocated` line)",
    doc="Spyre device allocations: size, device and address, with the host tensor that caused it when the line before says.",
    columns=_WHERE
    + """
    ts              ts         timestamp of the line (unified logging); NULL for legacy lines
    func            str        C++ function that logged it (allocate, allocate_tensor)
    nbytes          i64        bytes allocated
    device          str        e.g. spyre:0
    address         str        first chunk's logical address as region:offset (e.g. 0x7:0x634a0000), when logged
    total_size      i64        CompositeAddress total_size
    num_chunks      i32        CompositeAddress num_chunks
    chunks          json       CompositeAddress chunks [{region_id, offset, size, domain_id}]
    address_text    str        the `allocated` text as logged when it could not be parsed
    dtype           str        host dtype of the tensor being allocated (from the tensor info line)
    host_shape      list<i64>  host shape of the tensor being allocated
    """,
)

LAYOUTS = table(
    "spyre_layouts",
    version=1,
    group="spyre",
    grain="SpyreTensorLayout printed in the log",
    doc="""Device layouts chosen for tensors. Fields are parsed generically (key=[...] / key=value), so the five
    variants of Dec 2025 - Apr 2026 all load; fields without a column go to `fields`.""",
    columns=_WHERE
    + """
    ts              ts         timestamp of the line (unified logging); NULL for legacy lines
    func            str        function that printed it (spyre_empty_strided, spyre_empty_with_layout, ...)
    origin          str        allocation (a spyre line), illustrative (device_layout: line), embedded (inside another component's line)
    device_size     list<i64>  device_size
    dim_map         list<i64>  dim_map (before Apr 2026)
    stride_map      list<i64>  stride_map
    device_dtype    str        e.g. DataFormats.SEN169_FP16
    fields          json       every other field (device_strides, num_stick_dims, format, ...)
    device_bytes    i64        numel(device_size) × width(device_dtype)
    dtype           str        host dtype, from the tensor info line before it
    host_shape      list<i64>  host shape, from the tensor info line before it
    host_bytes      i64        numel(host_shape) × width(dtype)
    padding_bytes   i64        device_bytes - host_bytes
    layout_text     str        the SpyreTensorLayout(...) text
    """,
)

TIMING = table(
    "spyre_timing",
    version=1,
    group="spyre",
    grain="TORCH_SPYRE_TIMING event (rec.<pid>.json), or a pass's `elapsed Nms pass` log line",
    doc="""Compile pipeline timing recorded by torch-spyre: pipelines, passes and stages with inclusive and
    self time and counter deltas. Times are monotonic nanoseconds (time.perf_counter_ns), comparable within one pid.
    The `[INFO] [spyre.inductor.passes] elapsed    3ms  <pass>` lines of a log (TORCH_LOGS=+torch_spyre) are
    rows too: name `pass:<pass>`, kind pass, step the pass, inclusive_ns to the millisecond, no start or end,
    file and line_no of the log line.""",
    columns=_WHERE
    + """
    pid             i64        process that wrote the record
    name            str        full event name, e.g. pass:CustomPreSchedulingPasses:insert_restickify
    kind            str        pipeline, pass, stage (the name's first part)
    scope           str        the class / place (second part), e.g. CustomPreSchedulingPasses, SpyreAsyncCompile
    step            str        the pass or stage name (third part); NULL for pipelines
    ordinal         i64        event number in the record
    parent_ordinal  i64        enclosing event (NULL at top level)
    parent_name     str        enclosing event's name
    depth           i32        nesting depth (0 = top level)
    t_start_ns      i64        start, perf_counter ns
    t_end_ns        i64        end, perf_counter ns
    inclusive_ns    i64        time including children
    self_ns         i64        time excluding children
    kernel_name     str        meta.kernel for per-kernel stages
    counters        json       meta: node counts and counter deltas
    open            bool       the event was still open when the record was written
    error           str        error text recorded with the event
    torch_spyre_version str    from the record's meta
    git_sha         str        torch-spyre git sha from the record's meta
    """,
)

KERNEL_LAUNCHES = table(
    "kernel_launches",
    version=1,
    group="spyre",
    grain="kernel launch (a `RUN: <kernel> <dir>` line)",
    doc="Spyre kernel launches, in log order; launch_index counts the launches of each kernel in the file.",
    columns=_WHERE
    + """
    ts              ts         timestamp of the line when it has one
    kernel_name     str        kernel name, e.g. sdsc_fused_add_0
    code_dir        str        folder of the compiled kernel (the argument, or its folder when it names a file)
    launch_arg      str        the argument as logged (folder or g2.graph.cbor path)
    launch_index    i64        1 for the first launch of this kernel in the file, 2 for the second, ...
    level           str        log level (python logger lines); NULL for plain prints
    """,
)

MESSAGES = table(
    "spyre_messages",
    version=1,
    group="spyre",
    grain="Spyre log line (a DataConversionInfo block is one row)",
    doc="""Every line of a Spyre log written by torch-spyre (lossless), with its parsed prefix and what pt2logs
    made of it. Lines of other components are only counted (files.n_events counts these rows).""",
    columns=_WHERE
    + """
    n_lines         i32        lines spanned (1, or the block's lines)
    ts              ts         timestamp (unified logging C++ lines)
    shape           str        legacy ([ func ]), unified ([LEVEL] [spyre.x] date func:), python ([LEVEL] [spyre.x]), module ([LEVEL] [module], SPYRE_INDUCTOR_LOG), illustrative, print
    level           str        DEBUG, INFO, ... (NULL for legacy lines and prints)
    component       str        logger / component, e.g. spyre.runtime, spyre.inductor.kernel_runner; the module (lowering) for SPYRE_INDUCTOR_LOG lines
    func            str        C++ function name
    worker          str        vLLM worker prefix, e.g. Worker
    pid             i64        pid from the vLLM prefix
    kind            str        tensor_info, allocate, allocated, layout, copy_src, copy_dst, dci, run, generating, pass_time (a pass's elapsed time: a spyre_timing row), tensor_name, copy, status, other
    message         str        the message (for a block: with its text, at most 64 KB)
    """,
)

FAILURE_REPORTS = table(
    "spyre_failure_reports",
    version=1,
    group="spyre",
    grain="FFDC failure report (one ffdc_<category>_<time>_<pid>.json)",
    run_relative={"frame_file": None, "raise_file": "raise_kind"},
    doc="""Failures torch-spyre captured with `TORCH_SPYRE_FFDC=1` (First Failure Data Capture): where it
    failed (category: frontend compile, backend compile, kernel launch, unimplemented op), the exception,
    the kernel, the environment, the compiler artifacts found and whether the device was there. One
    report per failure; the run is the one of the folder holding `ffdc_reports/` (see docs/spyre.md).""",
    columns=_WHERE
    + """
    ts              ts         metadata.timestamp: when the report was captured (UTC)
    category        str        failure.category: compile_frontend, compile_backend, runtime_launch, unimplemented, unknown (compile before the frontend/backend split)
    exc_type        str        failure.exception_type (last dotted part), else the traceback's
    exc_message     str        failure.message: the exception text ("manual collection (no exception)" for a manual report)
    failure_key     str        the failure's identity: exception type + message with numbers, addresses, ids and paths masked
    frame_file      str        innermost user-code frame of the traceback (relative to the run's root), like failures.frame_file
    frame_kind      str        user, library or stdlib
    frame_line      i64        its line
    frame_func      str        its function
    stack           list<str>  the traceback's frames, outermost first (file:line in func)
    raise_file      str        failure.file: the innermost frame, where the exception was raised (absent before the frontend/backend split); package-relative for library code (torch_spyre/_inductor/lowering.py), run-relative for user code
    raise_kind      str        user, library or stdlib
    raise_line      i64        failure.lineno
    traceback       str        failure.traceback as written
    kernel_name     str        runtime.kernel_name (backend compile and runtime hooks)
    code_dir        str        runtime.code_dir: the kernel's compiled artifacts folder
    host            str        metadata.host
    pid             i64        metadata.pid: the failing process
    python_version  str        metadata.python_version, first word (3.11.9)
    torch_version   str        metadata.torch_version
    torch_spyre_version str    metadata.torch_spyre_version ("unavailable" when it could not be read)
    platform        str        metadata.platform
    spyre_available bool       hardware_state.spyre_available: whether a Spyre device answered
    hardware_note   str        hardware_state.note (or error): why there is no hardware state
    hardware_state  json       the hardware_state section as written
    environment     json       the environment section: TORCH_SPYRE_DEBUG, SPYRE_INDUCTOR_LOG, TORCH_LOGS, TORCH_COMPILE_DEBUG, SENCORES, ... ("" = unset)
    artifacts_searched bool    artifacts.searched
    artifact_count  i64        artifacts.found_count: compiler artifacts found near the failure
    artifact_paths  list<str>  artifacts.paths (at most 20)
    artifacts_error str        artifacts.error (the search timed out or failed)
    completeness_pct f64       collector.completeness_pct: share of the required fields the report has
    missing_fields  list<str>  collector.missing_fields
    collector_errors list<str> collector.collector_errors: what the capture itself failed to collect
    capture_ok      bool       collector.success
    capture_ms      f64        collector.capture_latency_ms
    report_path     str        _report_path, when the file holds it (a saved get_diagnostic_report() result)
    other           json       top-level sections no known version writes
    """,
)

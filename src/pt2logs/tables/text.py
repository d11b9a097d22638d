"""Text inputs: TORCH_LOGS stderr captures, counter dumps, compile_times(), TORCH_COMPILE_DEBUG files.

Filled by :mod:`pt2logs.readers.lines.torch_logs` (``log_lines``), :mod:`pt2logs.readers.documents.counters`
(``counters``, ``compile_times``) and :mod:`pt2logs.readers.documents.compile_debug` (``debug_artifacts``).
What these inputs say about recompiles, graph breaks and kernels goes to the shared compile tables
(``recompiles``, ``graph_breaks``, ``kernels``, ``extern_calls``) with ``source`` = ``torch_logs`` or
``compile_debug``; see docs/inputs.md for which source the default views keep.
"""

from pt2logs.tables.schema import table

LOG_LINES = table(
    "log_lines",
    version=1,
    group="text",
    grain="TORCH_LOGS message (consecutive lines with one glog prefix), or block of consecutive foreign lines",
    doc="""Every line of a TORCH_LOGS stderr capture, nothing dropped: torch log messages with their glog prefix
    parsed (a multi-line message, whose every line repeats the prefix, is one row) and the lines around them
    that are not torch log lines (print output, warnings, tracebacks, progress bars) as `foreign` blocks.
    Timestamps: the glog prefix has no year and is local time, and a stderr capture has no epoch time to fix
    either; the year comes from the file's mtime and the local time is taken as UTC (docs/inputs.md). A capture as a
    collector or launcher wrote it (docs/inputs.md "Logs as collected") is read by its lines; what the wrapping
    said about a row's first line is its `collected_lines` row.""",
    columns="""
    file        str   the file (relative to the run root)
    line_no     i64   1-based line of the row's first line
    n_lines     i32   lines joined into this row
    ts          ts    glog time of the message (year from the file's mtime, local time taken as UTC); NULL for foreign lines
    level       str   glog level letter: V (debug), I, W, E, C; NULL for foreign lines
    pid         i64   process id from the glog prefix
    pathname    str   torch source file that logged the message, e.g. torch/_dynamo/guards.py
    lineno      i32   line in that source file
    compile_id  str   compile id from the `[F/C]` tag without its attempt suffix (F/C, !A/F/C, !A); NULL when untagged
    attempt     i32   the `_N` suffix of the tag (`[0/0_1]`: 1), 0 when absent; NULL when untagged
    artifact    str   TORCH_LOGS artifact from the `[__name]` tag (recompiles, graph_breaks, output_code, ...); NULL for plain logger output
    message     str   the message, prefixes stripped, lines joined with newlines (foreign blocks: the lines as written)
    foreign     bool  a block of consecutive lines that are not torch log lines (at most 1,000 lines per row)
    """,
)

COLLECTED_LINES = table(
    "collected_lines",
    version=1,
    group="text",
    grain="log_lines row of a capture read through a collector's framing or a launcher's prefixes (its first line)",
    doc="""What the wrapping of a text capture said about each `log_lines` row's first line: a Kubernetes node log's
    stream and time, a JSON export's pod and container, journald's host and identifier, srun's task, Ray's or vLLM's
    process tag, Ray's repeat count (docs/inputs.md "Logs as collected"). Joined to `log_lines` on `run_id`, `file`
    and `line_no`. A capture read as it was written has no rows here (nothing is spent on it).""",
    columns="""
    file         str   the file (relative to the run root)
    line_no      i64   the `log_lines` row's line_no
    stream       str   stdout or stderr, as the collector recorded it (Kubernetes, Docker, Loki, GCP)
    collected_ts ts    when the collector received the line (its RFC 3339 time, in UTC with its year); NULL when it gives none
    host         str   the host the collector or launcher names (journald, Ray's `ip=`, a node label)
    pod          str   the Kubernetes pod (or CloudWatch log stream) the line came from
    container    str   the container (Kubernetes, docker compose's service-replica name)
    worker       str   the process a launcher's prefix names: Ray actor or task, vLLM process (`EngineCore_DP0`), journald identifier
    repeat       i32   Ray's log deduplication: the line stands for this many lines of other processes (`[repeated 7x across cluster]`: 7) besides the one printed before
    wrapped      str   the framing and prefixes taken off the line, outermost first, joined by `+` (`cri+srun_label+process_tag`)
    """,
)

COUNTERS = table(
    "counters",
    version=1,
    group="text",
    grain="counter of torch._dynamo.utils.counters in a dump file",
    doc="""`torch._dynamo.utils.counters` dumped as JSON (`{"counters": {group: {key: n}}, ...}` or a bare
    `{group: {key: n}}`). One row per group and key; the other top-level keys of the dump (scenario, torch,
    wall_s, pid, ...) are rows of category `dump_info`. Counters are cumulative for the process.""",
    columns="""
    file        str   the file (relative to the run root)
    category    str   counter group: frames, stats, graph_break, unimplemented, inductor, aot_autograd, aten_mm_info, resumes, ...; `dump_info` for other top-level keys of the file
    name        str   counter key (graph_break / unimplemented keys are full multi-line reasons, kept whole)
    value       i64   the count; NULL when the value is not an integer (see `text`)
    text        str   the value as text when it is not an integer (e.g. dump_info torch version, wall_s)
    """,
)

COMPILE_TIMES = table(
    "compile_times",
    version=1,
    group="text",
    grain="call of a dynamo_timed function in a compile_times() table",
    doc="""The text of `torch._dynamo.utils.compile_times()`: `TorchDynamo compilation metrics:` then a
    `Function | Runtimes (s)` table (tabulate layout, or the plain comma layout when tabulate is not
    installed), standalone or inside a counters dump. One row per value of the comma-separated list.
    An `aggregate=True` table has one value per function (the sum over calls): call_index 0.""",
    columns="""
    file         str   the file (relative to the run root)
    line_no      i64   line of the function's row within the table's text (1 = the `TorchDynamo compilation metrics:` line of a standalone file: its line in the file)
    source_key   str   where the table is: the JSON key of a counters dump (compile_times, compile_times_before_reset, ...), or `text` for a text file
    table_index  i32   0-based index of the table within the file (a file may hold several)
    layout       str   tabulate or plain
    function     str   the dynamo_timed function / phase, e.g. _compile.compile_inner, GraphLowering.compile_to_module
    call_index   i32   0-based position in the function's comma-separated list of runtimes (the n-th call)
    seconds      f64   runtime of that call, seconds (as printed: 4 decimals)
    """,
)

DEBUG_ARTIFACTS = table(
    "debug_artifacts",
    version=1,
    group="text",
    grain="file of a TORCH_COMPILE_DEBUG graph folder",
    doc="""The graphs and generated code TORCH_COMPILE_DEBUG=1 writes under
    `torch_compile_debug/run_<time>-pid_<pid>/torchinductor/model__<aot_id>_<graph>_<nth>.<n>/`: FX graphs
    (`fx_graph_readable.py`, `fx_graph_runnable.py`, `fx_graph_transformed.py`), inductor IR before and
    after fusion (`ir_pre_fusion.txt`, `ir_post_fusion.txt`), the output code (`output_code.py`, whose
    kernels also go to `kernels` / `extern_calls` with source `compile_debug`) and the provenance map.
    The text is kept whole.""",
    columns="""
    file        str   the file (relative to the run root)
    kind        str   fx_graph_readable, fx_graph_runnable, fx_graph_transformed, ir_pre_fusion, ir_post_fusion, output_code, provenance
    debug_run   str   the `run_<time>-pid_<pid>` folder (one per process); NULL when the file is not in one
    pid         i64   process id from the debug_run folder name
    graph_dir   str   the `model__<aot_id>_<graph>_<nth>.<n>` folder
    aot_id      i32   AOT id: the N of model__N_... (the `# AOT ID: ['N_forward']` of the output code)
    graph       str   forward, backward or inference (from the folder name, else the output code's AOT id line)
    nth_graph   i32   inductor's graph counter in the folder name
    n_lines     i64   lines in the file
    n_bytes     i64   size in bytes (decoded)
    n_nodes     i64   FX graphs: nodes (assignment lines); IR files: scheduler nodes (`opN: ...Node(` entries); output code: kernels
    text        str   the file's text
    """,
)

"""Core tables: runs, files, raw trace events, compilation metrics, ingest errors."""

from pt2logs.tables.compile import FRAME_IDS
from pt2logs.tables.schema import table

RUNS = table(
    "runs",
    version=3,
    per_rank=False,
    grain="run (one job execution: a folder of per-rank logs, or one file)",
    doc="""What was ingested and when. A run's rows in every other table share its run_id.
    A run that is ingested again (its files grew) gets a new row; views keep the newest.""",
    columns="""
    name            str        short human name: the run folder's or file's name
    source          str        the path that was given to `pt2logs ingest` for this run
    root            str        the run's folder (or file), absolute
    n_ranks         i32        distinct ranks seen; 1 when the logs carry no rank (one process)
    ranks           list<i64>  the ranks seen (empty when the logs carry no rank)
    n_files         i32        log files in the run
    formats         list<str>  input formats found (torch_trace, torch_logs, ...)
    torch_version   str        torch version the run's logs name (the best source in `torch_version_from`)
    torch_version_from str     where torch_version was read, best first: `torch_version_artifact` (the trace's artifact), `repro_payload` (the `# torch version:` line of an fx_graph_runnable payload or file), `compilation_metrics` (its pytorch_version), `counters` (the dump's `torch`), `pt2logs_run` (the torch installed where `pt2logs run` ran the command); NULL in rows older than v3
    started_at      ts         earliest timestamp in the run's logs (UTC)
    ended_at        ts         latest timestamp in the run's logs (UTC)
    tags            json       user labels from --tag k=v, e.g. {"model": "llama"}
    ingested_at     ts         when this ingest started (UTC)
    committed_at    ts         when this ingest committed the run (UTC); the newest wins
    bytes           i64        bytes of log read (decompressed)
    n_events        i64        records/lines parsed
    n_errors        i64        ingest errors (data that could not be read)
    n_warnings      i64        ingest warnings (data kept but suspicious, e.g. md5 mismatch)
    command         str        command line, for runs recorded by `pt2logs run`
    exit_code       i32        exit status, for runs recorded by `pt2logs run` (negative: ended by that signal)
    exit_signal     str        the signal that ended the command (SIGKILL, SIGTERM, ...), for `pt2logs run`
    wall_s          f64        wall time in seconds, for runs recorded by `pt2logs run`
    host            str        host name, for runs recorded by `pt2logs run`
    git_commit      str        git commit of the working directory, for `pt2logs run`
    pt2logs_version str        version of pt2logs that ingested the run
    python_version  str        Python version (compilation_metrics.python_version, else the lib/pythonX.Y folders of logged paths)
    cwd             str        working directory, for runs recorded by `pt2logs run`
    user_root       str        the folder user-code paths are shown relative to: cwd when recorded, else the longest common folder of the run's user-code files (ends in /)
    """,
)

FILES = table(
    "files",
    version=2,
    grain="input file of a run",
    doc="Every file read for a run, with its size, content hash and counts. Used for incremental re-ingest.",
    columns="""
    path            str   the file, absolute path or URL
    relpath         str   path relative to the run's root
    format          str   detected format (torch_trace, torch_logs, counters_json, ...)
    compression     str   none, gzip, zstd or bz2
    bytes           i64   size on disk
    content_bytes   i64   size after decompression
    content_hash    str   hash of every stored byte: xxh3_128:<hex> (sha1 <hex> where xxhash is missing or in older warehouses)
    mtime           ts    modification time when read
    change_token    str   what else a rewrite changes, compared with bytes and mtime on re-ingest: `ctime:<ns>` (a local file's ctime: unlike the mtime it cannot be set back), `version:<id>` or `etag:<etag>` (an object store's, when listed); NULL when there is none (or in rows older than v2)
    n_lines         i64   lines read
    n_events        i64   records parsed (trace records, log messages, ...)
    n_errors        i64   ingest errors in this file
    n_warnings      i64   ingest warnings in this file
    n_unknown       i64   records of a kind pt2logs does not interpret (kept in `events`)
    first_ts        ts    earliest timestamp in the file
    last_ts         ts    latest timestamp in the file
    """,
)

EVENTS = table(
    "events",
    version=1,
    grain="TORCH_TRACE record (header line plus payload lines)",
    doc="""Every structured-trace record, lossless: the envelope as JSON text and the payload as text.
    Nothing is dropped: kinds pt2logs does not interpret are kept here and counted as unknown.""",
    columns="""
    file                  str   the file (relative to the run root)
    line_no               i64   1-based line number of the header line
    n_lines               i32   lines the record spans (1 + payload lines)
    ts                    ts    glog timestamp of the header, made absolute (UTC, year from the log's epoch times)
    level                 str   glog level letter (V, I, W, E, C)
    thread                i64   thread id from the glog prefix
    pathname              str   torch source file that emitted the record
    lineno                i32   line in that source file
    event_type            str   the envelope's event key (chromium_event, artifact, compilation_metrics, ...)
    artifact_name         str   for artifact / dump_file / graph_dump events: the artifact's name
    compile_id            str   text compile id: F/C, or !A/F/C with compiled autograd; NULL outside a compile
    frame_id              i32   envelope frame_id
    frame_compile_id      i32   envelope frame_compile_id
    attempt               i32   envelope attempt (restarts of one compile)
    compiled_autograd_id  i32   envelope compiled_autograd_id
    envelope              json  the header's JSON object, as written
    payload               str   payload text (tab-stripped lines joined by newlines); NULL when none
    payload_bytes         i64   payload size in bytes
    payload_md5           str   the envelope's has_payload md5
    payload_ok            bool  payload md5 matches (NULL when the record has no payload)
    """,
)

_CM_FIELDS = """
    compile_id                                  str        compile id (F/C, !A/F/C)
    kind                                        str        compilation_metrics, bwd_compilation_metrics, compilation_metrics_runtime, ...
    line_no                                     i64        line of the record in its file
    ts                                          ts         start of the compile (start_time, else the record's glog time)
    frame_key                                   str        torch field
    co_name                                     str        compiled function name
    co_filename                                 str        its file
    co_firstlineno                              i32        its first line
    cache_size                                  i64        torch field
    accumulated_cache_size                      i64        torch field
    guard_count                                 i64        guards installed
    shape_env_guard_count                       i64        symbolic-shape guards
    graph_op_count                              i64        ops in the captured graph
    graph_node_count                            i64        nodes in the captured graph
    graph_input_count                           i64        graph inputs
    start_time                                  f64        epoch seconds
    entire_frame_compile_time_s                 f64        whole frame compile time (s); when torch left it out (2.6 nightlies): dynamo_cumulative_compile_time_us, else the entire_frame_compile span
    backend_compile_time_s                      f64        backend (AOT + inductor) time (s); when left out: aot_autograd_cumulative_compile_time_us
    inductor_compile_time_s                     f64        inductor time (s); when left out: inductor_cumulative_compile_time_us
    code_gen_time_s                             f64        code generation time (s); when left out: inductor_code_gen_cumulative_compile_time_us
    fail_type                                   str        exception type when the compile failed
    fail_reason                                 str        exception text when the compile failed
    fail_user_frame_filename                    str        user frame of the failure
    fail_user_frame_lineno                      i64        user line of the failure
    non_compliant_ops                           list<str>  torch field
    compliant_custom_ops                        list<str>  torch field
    restart_reasons                             list<str>  why dynamo restarted the analysis (graph breaks)
    dynamo_time_before_restart_s                f64        torch field
    stack_trace                                 list<str>  torch field
    exception_stack_trace                       list<str>  torch field
    graph_node_shapes                           str        torch field
    has_guarded_code                            bool       a compiled graph was installed
    remote_cache_time_saved_s                   f64        torch field
    structured_logging_overhead_s               f64        torch field
    config_suppress_errors                      bool       torch field
    config_inline_inbuilt_nn_modules            bool       torch field
    specialize_float                            bool       torch field
    dynamo_config                               json       dynamo config (JSON text)
    compiler_config                             json       torch field
    is_forward                                  bool       forward (vs backward) compile
    num_triton_bundles                          i64        torch field
    remote_fx_graph_cache_get_time_ms           i64        torch field
    remote_fx_graph_cache_put_time_ms           i64        torch field
    start_time_us                               i64        epoch µs
    duration_us                                 i64        duration µs
    dynamo_cumulative_compile_time_us           i64        torch field
    aot_autograd_cumulative_compile_time_us     i64        torch field
    inductor_cumulative_compile_time_us         i64        torch field
    inductor_code_gen_cumulative_compile_time_us i64       torch field
    triton_compile_time_us                      i64        torch field
    runtime_cudagraphify_time_us                i64        torch field
    runtime_triton_autotune_time_us             i64        torch field
    dynamo_compile_time_before_restart_us       i64        torch field
    distributed_ephemeral_timeout_us            i64        torch field
    structured_logging_overhead_us              i64        torch field
    remote_fx_graph_cache_get_time_us           i64        torch field
    remote_fx_graph_cache_put_time_us           i64        torch field
    backward_cumulative_compile_time_us         i64        torch field
    end_time_us                                 i64        epoch µs
    pre_grad_pass_time_us                       i64        torch field
    post_grad_pass_time_us                      i64        torch field
    joint_graph_pass_time_us                    i64        torch field
    log_format_version                          i64        torch field
    inductor_config                             json       inductor config (JSON text)
    remote_cache_version                        i64        torch field
    inductor_fx_remote_cache_hit_count          i64        torch field
    inductor_fx_remote_cache_miss_count         i64        torch field
    inductor_fx_remote_cache_backend_type       str        torch field
    inductor_fx_remote_cache_hit_keys           str        torch field
    inductor_fx_remote_cache_miss_keys          str        torch field
    inductor_fx_local_cache_hit_count           i64        torch field
    inductor_fx_local_cache_miss_count          i64        torch field
    aotautograd_remote_cache_hit_count          i64        torch field
    aotautograd_remote_cache_miss_count         i64        torch field
    aotautograd_local_cache_hit_count           i64        torch field
    aotautograd_local_cache_miss_count          i64        torch field
    cuda_version                                str        torch field
    triton_version                              str        torch field
    feature_usage                               json       torch field
    compile_time_autotune_time_us               i64        torch field
    is_runtime                                  bool       torch field
    gc_time_us                                  i64        torch field
    tensorify_float_attempt                     bool       torch field
    tensorify_float_success                     bool       torch field
    tensorify_float_failure                     list<str>  torch field
    guard_latency_us                            f64        torch field
    recompile_reason                            str        torch field
    num_graph_breaks                            i64        cumulative for the process, not per frame
    triton_kernel_compile_times_us              str        torch field
    ir_count                                    i64        torch field
    cudagraph_skip_reason                       str        torch field
    python_version                              str        torch field
    pgo_put_remote_code_state_time_us           i64        torch field
    pgo_get_remote_code_state_time_us           i64        torch field
    param_numel                                 i64        torch field
    param_bytes                                 i64        torch field
    param_count                                 i64        torch field
    recompile_user_contexts                     list<str>  torch field
    inline_inbuilt_nn_modules_candidate         bool       torch field
    pytorch_version                             str        torch field
    inductor_provenance                         list<str>  torch field
    functorch_config                            json       torch field
    extra                                       json       fields this pt2logs does not know (newer torch), or whose value did not fit the column type
"""

COMPILATION_METRICS = table(
    "compilation_metrics",
    version=3,
    grain="compilation_metrics record (one per compile attempt)",
    run_relative={"co_file": "co_file_kind"},
    doc="""Every field torch emits in compilation_metrics / bwd_compilation_metrics and their
    _runtime variants, one column each (torch 2.13's full CompilationMetrics); unknown fields go to `extra`.""",
    columns="file str the file (relative to the run root)\n"
    + _CM_FIELDS
    + """
    co_file  str  co_filename's identity: package-relative for installed packages and torch, <stdlib>/… for the standard library, relative to the run's root (runs.user_root) for user code in the views (absolute in the Parquet files)
    co_file_kind  str  user, library, stdlib or other
    """
    + FRAME_IDS,
)

#: compilation_metrics fields that map to a column (everything but our own bookkeeping)
CM_OWN = {
    "file",
    "kind",
    "line_no",
    "ts",
    "extra",
    "co_file",
    "co_file_kind",
    "frame_id",
    "frame_compile_id",
}

INGEST_ERRORS = table(
    "ingest_errors",
    version=1,
    grain="bad or suspicious piece of input",
    doc="""Everything that could not be read, with file and line, so nothing is lost silently.
    severity `error`: data could not be parsed; `warning`: data kept but suspicious (e.g. md5 mismatch).""",
    columns="""
    path       str   the file
    line_no    i64   1-based line number (NULL for whole-file problems)
    kind       str   bad_prefix, bad_json, not_an_object, payload_md5_mismatch, bad_payload_json, truncated, decode_error, unreadable, ...
    severity   str   error or warning
    message    str   what went wrong, in a sentence
    excerpt    str   the offending text (at most 1 KB)
    """,
)

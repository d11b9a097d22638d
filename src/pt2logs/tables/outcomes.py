"""How runs ended: the evidence lines of a job's stderr and of ``pt2logs run``'s own record.

Filled by :mod:`pt2logs.readers.lines.outcome_lines` (every stderr capture) and
:mod:`pt2logs.readers.documents.run_record` (``pt2logs run``). The outcome of a run and of each rank is
decided at query time from these rows, the trace files' times and the compiles left open
(``run_outcomes``, ``rank_outcomes``; see docs/architecture.md, "Run outcomes").
"""

from pt2logs.tables.schema import _parse_columns, table

OUTCOME_EVIDENCE = table(
    "outcome_evidence",
    version=2,
    group="outcomes",
    grain="line (or ChildFailedError entry, or traceback) that says how a process ended",
    doc="""The lines of a job's stderr that say how its processes ended, with file and line: exit codes
    and signals (`pt2logs run`'s record, torchrun's `failed (exitcode: N)` and `closing signal` lines,
    each entry of `ChildFailedError`'s table), collective timeouts (NCCL's watchdog, gloo's `Timed out
    waiting`, monitored barriers), a peer that closed the connection, Python exceptions (one row per
    traceback, at its exception line), CUDA out of memory, segfaults and aborts, the OOM killer's
    `Killed`. `means` is the outcome the line points to; `run_outcomes` / `rank_outcomes` weigh them.
    Times on these lines are local time taken as UTC, like `log_lines`.""",
    columns="""
    file        str   the file (relative to the run root)
    line_no     i64   1-based line of the evidence: the exception line of a traceback, the first line of a table entry
    n_lines     i32   lines the evidence spans (a traceback from its first line, a table entry)
    ts          ts    time on the line (glog or c10 prefix, the table's `time`), local time taken as UTC; NULL when the line has none
    kind        str   exit_status, worker_exit, child_failure, closing_signal, forced_kill, agent_signal, signal_received, collective_timeout, heartbeat_timeout, barrier_timeout, barrier_wait, watchdog_status, watchdog_exception, collective_mismatch, peer_closed, exception, oom, segfault, abort, oom_killed, launcher_failed
    means       str   the outcome the line points to: hung, crashed, failed, killed, completed, or info
    secondary   bool  a consequence of another process's end: the launcher's closing signal (and the SIGTERM exit it causes), a peer that closed the connection
    root_cause  bool  the entry ChildFailedError's table calls `Root Cause (first observed failure)`
    pid         i64   process id the line names (or that wrote it)
    local_rank  i32   local rank the line names (torchrun's lines)
    rank_from   str   how `rank` was found: prefix ([rankN]:), launcher (srun --label's task id before the line), message ([Rank N]), table (ChildFailedError entry), pid (another line of that pid), file (the file's rank), run (pt2logs run: the whole job)
    exit_code   i32   exit status; negative: ended by that signal (-9: SIGKILL)
    signal      str   the signal that ended the process (SIGKILL, SIGTERM, SIGABRT, ...)
    exc_type    str   exception type of a traceback (RuntimeError, torch.OutOfMemoryError, ...)
    exc_message str   the exception's message: the rest of its line (`No available memory for the cache blocks. ...`)
    location    str   innermost frame of the traceback: file:line in function; for Dynamo's errors the innermost user-code frame of its `from user code:` section
    collective  str   the collective that timed out: NCCL OpType (ALLREDUCE, ...), gloo op (recv, send), barrier
    seq_num     i64   NCCL work sequence number (SeqNum) of the collective
    timeout_ms  i64   the timeout that expired, in ms
    elapsed_ms  i64   how long it had run or waited, in ms
    text        str   the line(s) as written (at most 1 KB)
    detail      json  what else the line says: ChildFailedError's host, error_file and traceback; NCCL's WorkNCCL fields; pt2logs run's command and wall time
    """,
)

#: The rows ``rank_outcomes()`` gives, as they are kept per transaction (:mod:`pt2logs.query.kept_rows`):
#: not a warehouse table (no view, no transaction writes it) but the schema of the kept rows, declared here
#: once; tests/test_outcome_store.py checks it against the macro's own columns. Bump ``KEPT_VERSION`` with
#: any change that makes the kept rows of an old warehouse wrong (they are then decided again).
KEPT_VERSION = 1
KEPT_RANK_OUTCOMES = _parse_columns(
    """
    run_id            str
    run               str
    rank              i32
    outcome           str
    why               str
    rule              str
    evidence_file     str
    evidence_line     i64
    evidence_kind     str
    evidence          str
    exit_code         i32
    signal            str
    first_ts          ts
    last_event_at     ts
    run_end           ts
    run_end_from      str
    silent_s          f64
    threshold_s       f64
    gap_s             f64
    quiet_s           f64
    compiles          i64
    open_compiles     i64
    open_compile_ids  str
    open_phase        str
    first_own_line    i64
    root_cause        bool
    txn               str   the run's transaction the row was decided from
    """
)

#: The rows ``advice_items()`` gives, as they are kept per transaction (:mod:`pt2logs.query.kept_rows`), and
#: with them one row per run with ``id`` NULL (the runs matched, items or not): not a warehouse table, the schema
#: of the kept rows, declared once; tests/test_advice_store.py checks it against the macro's own columns. Bump
#: ``KEPT_ADVICE_VERSION`` with any change that makes the kept items of an old warehouse wrong.
KEPT_ADVICE_VERSION = 1
KEPT_ADVICE_ITEMS = _parse_columns(
    """
    run          str
    run_id       str
    id           str
    finding      str
    evidence     str
    frames       list<str>
    subject      str
    location     str
    compile_s    f64
    recompiles   i64
    breaks       i64
    failures     i64
    advice       str
    cost         str
    ranks        list<i32>
    compile_ids  str
    rule_order   i32
    first_ts     ts
    txn          str   the run's transaction the row was matched from
    """
)

#: The rows ``run_facts()`` gives, as they are kept per transaction (:mod:`pt2logs.query.kept_rows`): a row per run
#: (``what`` = 'run'), one per distinct graph-break site of it ('site'), its recompiles, failed compiles and
#: kernels, cache lookups and compiles counted by what the weekly cards group them by ('recompile', 'failure',
#: 'kernel', 'cache', 'frame'): what those cards total
#: per run. Not a warehouse table, the schema of the kept rows, declared once; tests/test_run_facts.py checks it
#: against the macro's own columns. Bump ``KEPT_FACTS_VERSION`` with any change that makes old kept facts wrong.
KEPT_FACTS_VERSION = 1
KEPT_RUN_FACTS = _parse_columns(
    """
    what           str
    run_id         str
    compile_s      f64
    compiles       i64
    failures       i64
    recompiles     i64
    graph_breaks   i64
    total          f64
    dynamo         f64
    aot            f64
    inductor       f64
    codegen        f64
    site_break     str
    site_file      str
    site_line      i32
    library_frame  str
    cause          str
    co_name        str
    fn_file        str
    fn_line        i32
    n              i64
    limit_hits     i64
    failure_key    str
    exc_type       str
    fail_type      str
    reason         str
    location       str
    last_ts        ts
    backend        str
    kernel_kind    str
    fresh          i64
    from_cache     i64
    kernel_compiles  i64
    ingest_date    str
    gb_id          str
    gb_type        str
    occurrences    i64
    site_compiles  i64
    explanation    str
    cache          str
    hits           i64
    misses         i64
    bypasses       i64
    saved_ms       f64
    co_firstlineno  i32
    max_s          f64
    txn            str   the run's transaction the row was computed from
    """
)

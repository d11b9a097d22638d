"""The outcome of a run and of each of its ranks, decided from stored facts: the rules, and the facts they take.

Decided at query time, or once after the run's commit and kept (:mod:`pt2logs.query.kept_rows`: the same
rows, read for the runs whose live transaction has them).

The rules are two DuckDB table macros, ``queries/macros/rank_outcomes.sql`` and ``run_outcome_rows.sql``
(:mod:`pt2logs.query.macros`); the format lists below fill them (``{{stderr_formats}}``, ``{{trace_formats}}``).

``rank_outcomes(run, since, until, tag)`` weighs, per rank, the ``outcome_evidence`` rows of the
run's stderr captures and of ``pt2logs run``'s record, the trace files' first and last times
(``files``), compiles begun and never finished (``compile_phases`` spans without an end) and the run's
end. The named queries ``rank_outcomes`` and ``run_outcomes`` (and through them ``summary``, ``ranks``,
the run page and the weekly card) read it, so every place says the same thing. Why not decided by
the readers at ingest: the evidence of one run arrives in several files that are read by different tasks
(and a stderr capture may be ingested after its trace), and the rules will change; rows do not.

``run_outcome_rows(run, since, until, tag)`` gives one row per run from those: a run hung when any
rank hung; else it ended as its root-cause rank did (the rank whose own failure, crash or kill comes
first in the capture, ChildFailedError's root cause on a tie); else as ``pt2logs run`` recorded;
``completed`` when every rank completed; else ``unknown``. ``pt2logs run``'s exit status 0 wins over all.

The rules for a rank, in order (the first that holds decides; docs/architecture.md "Run outcomes"):

1. ``completed``: ``pt2logs run`` recorded exit status 0.
2. ``hung``: a line of the rank says a collective or barrier timed out (NCCL watchdog, gloo
   ``Timed out waiting``, monitored barrier, heartbeat monitor).
3. ``crashed``: a crash of its own: a crash signal (SIGSEGV, SIGABRT, ...), a segfault, an abort, a
   collective size mismatch.
4. ``failed``: a Python exception (traceback) or CUDA out of memory.
5. ``killed``: ended by a signal nobody in the job sent (SIGKILL from the OOM killer, ``Killed``).
5b. ``hung`` (``silent_stop``): the whole job stopped from outside (the agent's death signal, ``pt2logs run``
   ending by a signal) after every rank that left a trace was silent (``quiet_s``) for at least its
   threshold: "stopped from outside after N s of silence"; the stop ended a hang.
6. ``hung``: in a run where some rank hung, a rank whose end was a consequence (the launcher's
   closing signal, a peer that went away, a non-zero exit) or that left no evidence: stuck in the
   same hang.
7. ``killed``: the launcher's closing signal (after another rank's failure).
8. ``failed``: a peer that closed the connection, or a non-zero exit status.
9. ``completed``: exit status 0.
10. ``hung``: a compile begun and never finished, the rank then silent for longer than its hang
    threshold (``silent_s >= threshold_s``), or the whole job killed from outside (the agent's death
    signal, ``pt2logs run`` ending by a signal) after such a silence.
11. ``killed``: the whole job killed from outside.
12. ``failed`` / ``crashed``: ``pt2logs run`` recorded such an exit.
13. ``unknown``; when the rank's trace ends inside a compile (a start, no end), the why says so: "the log
    ends inside compile 0/0 (inductor codegen) with no exit record: crashed or killed while compiling?".

Evidence is what ended a process: an error torch caught and logged (a glog-prefixed line, e.g. autotune's
"No valid triton configs. OutOfMemoryError: out of resource") is not (readers/outcome_patterns.py
``LOGGED_NOT_EVIDENCE``).

Silence: from the rank's last trace event to the run's end (the stderr capture's last time, corrected
to UTC; else ``pt2logs run``'s end; else the newest mtime of a file that is not a trace, unless it is a
week after the last trace event: copied files; else the last trace event of any rank). ``silent_s`` counts from
the rank's last trace event; ``quiet_s`` (what the hang rules read) from its last trace event or stderr line,
whichever is later. The hang threshold is 10 times the rank's rhythm (the largest of its longest compile, the
mean time between its compiles and its largest gap between two trace events or two of its stderr lines,
``gap_s``), at least 60 s.
Stderr times are local time read as UTC: their offset from UTC is the difference between a compile's
first TORCH_LOGS line in the capture and its start in the trace, rounded to 15 minutes (the median
over the run's compiles); without such a pair, the difference between the capture's last time and its
file's mtime, rounded likewise (used when within 2 minutes of a multiple and at most 14 h); else 0.
"""

from __future__ import annotations

import functools


@functools.cache
def stderr_formats() -> tuple[str, ...]:
    """The names of the formats whose files are stderr captures, from the registry (each Format's role)."""
    from pt2logs.readers import CAPTURE, named

    return named(CAPTURE)


@functools.cache
def trace_formats() -> tuple[str, ...]:
    """The names of the formats whose files are traces, from the registry (each Format's role).

    Both are asked only where the rules' SQL is made (a snapshot's catalog, once per snapshot): a command that
    attaches a kept catalog never imports the readers (tests/test_lazy_registry.py)."""
    from pt2logs.readers import TRACE, named

    return named(TRACE)

"""The outcome of a run and of each of its ranks, decided at query time: one DuckDB table macro.

``rank_outcomes(run, since, until, tag)`` weighs, per rank, the ``outcome_evidence`` rows of the
run's stderr captures and of ``pt2logs run``'s record, the trace files' first and last times
(``files``), compiles begun and never finished (``compile_phases`` spans without an end) and the run's
end. The named queries ``rank_outcomes`` and ``run_outcomes`` (and through them ``summary``, ``ranks``,
the run page and the weekly card) read it, so every place says the same thing. Why query time and
not ingest time: the evidence of one run arrives in several files that are read by different tasks
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

from pt2logs.readers import CAPTURE, TRACE, named

#: format names whose files are stderr captures / traces: from the registry (each Format's role)
STDERR_FORMATS = named(CAPTURE)
TRACE_FORMATS = named(TRACE)

_IN = "('" + "', '".join(STDERR_FORMATS) + "')"
_TR = "('" + "', '".join(TRACE_FORMATS) + "')"

RANK_OUTCOMES = f"""CREATE OR REPLACE MACRO rank_outcomes(p_run, p_since, p_until, p_tag) AS TABLE
WITH sel AS (SELECT run_id FROM selected_runs(p_run, p_since, p_until, p_tag)),
r AS (SELECT run_id, name, ranks, started_at FROM runs WHERE run_id IN (SELECT run_id FROM sel)),
ev AS (SELECT *, CASE WHEN means = 'hung' THEN 1 WHEN means = 'crashed' THEN 2 WHEN kind IN ('exception', 'oom') THEN 3
                      WHEN means = 'killed' AND NOT coalesce(secondary, false) THEN 4 WHEN means = 'killed' THEN 5
                      WHEN kind = 'peer_closed' THEN 6 WHEN means = 'failed' THEN 7 WHEN means = 'completed' THEN 8 ELSE 9 END AS pri
       FROM outcome_evidence WHERE run_id IN (SELECT run_id FROM sel)),
f AS (SELECT run_id, rank, format, first_ts, last_ts, mtime FROM files WHERE run_id IN (SELECT run_id FROM sel)),
err2 AS (SELECT run_id, max(last_ts) AS err_last, max(mtime) AS err_mtime FROM f WHERE format IN {_IN} GROUP BY run_id),
off AS (SELECT run_id, err_last, epoch(err_last) - epoch(err_mtime) AS d FROM err2),
-- the same compile in the stderr (its first TORCH_LOGS line, local time) and in the trace (its start, UTC)
cal AS (
  SELECT l.run_id, median(round((epoch(l.first_ts) - m.start_s) / 900) * 900) AS offset_s
  FROM (SELECT run_id, rank, compile_id, min(ts) AS first_ts FROM log_lines
        WHERE NOT "foreign" AND compile_id IS NOT NULL AND ts IS NOT NULL AND run_id IN (SELECT run_id FROM sel) GROUP BY ALL) l
  JOIN (SELECT run_id, rank, compile_id, min(coalesce(start_time, epoch(ts))) AS start_s FROM compilation_metrics
        WHERE kind = 'compilation_metrics' AND run_id IN (SELECT run_id FROM sel) GROUP BY ALL) m
    ON m.run_id = l.run_id AND m.rank IS NOT DISTINCT FROM l.rank AND m.compile_id = l.compile_id
  GROUP BY l.run_id),
ends0 AS (
  SELECT r.run_id, o.err_last, coalesce(c.offset_s,
                      CASE WHEN abs(o.d) <= 50400 AND abs(o.d - round(o.d / 900) * 900) < 120 THEN round(o.d / 900) * 900 ELSE 0 END) AS off_s
  FROM r LEFT JOIN off o USING (run_id) LEFT JOIN cal c USING (run_id)),
ends AS (
  SELECT r.run_id, to_timestamp(epoch(e0.err_last) - e0.off_s) AS stderr_end, e0.off_s,
         (SELECT max(ts) FROM ev WHERE ev.run_id = r.run_id AND ev.kind = 'exit_status') AS record_end,
         -- files written at the end (a stderr without times, counters dumped at exit); a trace file's own
         -- mtime is its last event. Ignored when a week after the last trace event (the files were copied).
         (SELECT max(mtime) FROM f WHERE f.run_id = r.run_id AND f.format NOT IN {_TR}
            AND f.mtime <= coalesce((SELECT max(last_ts) FROM f t WHERE t.run_id = r.run_id AND t.format IN {_TR}), f.mtime) + INTERVAL 7 DAY)
           AS mtime_end
  FROM r JOIN ends0 e0 USING (run_id)),
-- each rank's rhythm: its largest gap between two trace events, or between two of its stderr lines
gap AS (
  SELECT run_id, rank, max(d) AS gap_s FROM (
    SELECT run_id, rank, epoch(ts) - epoch(lag(ts) OVER (PARTITION BY run_id, rank ORDER BY ts)) AS d
    FROM events WHERE run_id IN (SELECT run_id FROM sel) AND ts IS NOT NULL
    UNION ALL
    SELECT run_id, rank, epoch(ts) - epoch(lag(ts) OVER (PARTITION BY run_id, rank ORDER BY ts))
    FROM log_lines WHERE run_id IN (SELECT run_id FROM sel) AND ts IS NOT NULL)
  GROUP BY ALL),
-- each rank's last stderr line (local time, corrected as the run's end is)
lines_end AS (SELECT run_id, rank, max(ts) AS last_line FROM log_lines WHERE run_id IN (SELECT run_id FROM sel) AND ts IS NOT NULL GROUP BY ALL),
rk AS (
  SELECT run_id, unnest(ranks)::INTEGER AS rank FROM r
  UNION SELECT run_id, rank FROM ev WHERE rank IS NOT NULL
  UNION SELECT run_id, rank FROM f WHERE rank IS NOT NULL),
ranks_ AS (SELECT * FROM rk UNION ALL SELECT run_id, NULL::INTEGER FROM r WHERE run_id NOT IN (SELECT run_id FROM rk)),
tr AS (SELECT run_id, rank, min(first_ts) AS first_ts, max(last_ts) AS last_ts FROM f WHERE format IN {_TR} GROUP BY ALL),
cm AS (SELECT run_id, rank, count(*) AS compiles, max(entire_frame_compile_time_s) AS longest_compile_s
       FROM compilation_metrics WHERE kind = 'compilation_metrics' AND run_id IN (SELECT run_id FROM sel) GROUP BY ALL),
op AS (SELECT run_id, rank, count(*) FILTER (WHERE phase = 'entire_frame_compile') AS open_compiles,
              string_agg(DISTINCT compile_id, ' ' ORDER BY compile_id) FILTER (WHERE phase = 'entire_frame_compile') AS open_compile_ids,
              arg_max(phase, depth) AS open_phase
       FROM compile_phases WHERE duration_us IS NULL AND NOT coalesce(is_instant, false)
         AND run_id IN (SELECT run_id FROM sel) GROUP BY ALL),
e AS (
  SELECT run_id, rank,
         bool_or(pri = 1) AS timeout, bool_or(pri = 2) AS crash, bool_or(pri = 3) AS exc, bool_or(pri = 4) AS own_kill,
         bool_or(pri = 5) AS launcher_kill, bool_or(pri = 6) AS peer, bool_or(pri = 7) AS exit_failed, bool_or(pri = 8) AS exit0,
         min(line_no) FILTER (WHERE pri <= 4 OR pri = 7) AS first_own_line, bool_or(coalesce(root_cause, false)) AS root_cause,
         arg_min({{'file': file, 'line_no': line_no, 'kind': kind, 'text': text, 'exit_code': exit_code, 'signal': signal,
                  'exc_type': exc_type, 'location': location, 'collective': collective, 'timeout_ms': timeout_ms}},
                 pri * 1000000000000 + coalesce(line_no, 0)) AS ev
  FROM ev GROUP BY ALL),
run_ev AS (
  SELECT run_id, bool_or(pri = 1) AS any_hung,
         bool_or(rank IS NULL AND pri = 4 AND kind <> 'exit_status') OR bool_or(kind = 'exit_status' AND means = 'killed') AS outside_kill,
         arg_max(means, line_no) FILTER (WHERE kind = 'exit_status') AS record_means,
         arg_min({{'file': file, 'line_no': line_no, 'kind': kind, 'text': text, 'exit_code': exit_code, 'signal': signal,
                  'exc_type': exc_type, 'location': location, 'collective': collective, 'timeout_ms': timeout_ms}},
                 CASE WHEN kind = 'exit_status' THEN 0 ELSE pri END * 1000000000000 + coalesce(line_no, 0))
           FILTER (WHERE rank IS NULL) AS run_level
  FROM ev GROUP BY run_id),
facts AS (
  SELECT k.run_id, r.name AS run, k.rank, t.first_ts, t.last_ts, c.compiles, c.longest_compile_s,
         coalesce(o.open_compiles, 0) AS open_compiles, o.open_compile_ids, o.open_phase,
         greatest(coalesce(n.stderr_end, n.record_end, n.mtime_end), max(t.last_ts) OVER (PARTITION BY k.run_id)) AS run_end,
         CASE WHEN n.stderr_end IS NOT NULL THEN 'stderr' WHEN n.record_end IS NOT NULL THEN 'pt2logs run'
              WHEN n.mtime_end IS NOT NULL THEN 'file mtimes'
              WHEN max(t.last_ts) OVER (PARTITION BY k.run_id) IS NOT NULL THEN 'last trace event' END AS run_end_from,
         greatest(60.0, 10 * greatest(coalesce(c.longest_compile_s, 0), coalesce(g.gap_s, 0),
                                      coalesce((epoch(t.last_ts) - epoch(t.first_ts)) / nullif(c.compiles, 0), 0))) AS threshold_s,
         g.gap_s, greatest(t.last_ts, to_timestamp(epoch(le.last_line) - coalesce(n.off_s, 0))) AS active_until,
         e.timeout, e.crash, e.exc, e.own_kill, e.launcher_kill, e.peer, e.exit_failed, e.exit0, e.first_own_line,
         e.root_cause, coalesce(e.ev, CASE WHEN k.rank IS NULL OR r.ranks IS NULL OR len(r.ranks) <= 1 OR v.outside_kill THEN v.run_level END) AS ev,
         v.any_hung, v.outside_kill, v.record_means, v.run_level, e.run_id IS NULL AS no_evidence
  FROM ranks_ k JOIN r USING (run_id) LEFT JOIN ends n USING (run_id) LEFT JOIN tr t ON t.run_id = k.run_id AND t.rank IS NOT DISTINCT FROM k.rank
       LEFT JOIN cm c ON c.run_id = k.run_id AND c.rank IS NOT DISTINCT FROM k.rank
       LEFT JOIN op o ON o.run_id = k.run_id AND o.rank IS NOT DISTINCT FROM k.rank
       LEFT JOIN e ON e.run_id = k.run_id AND e.rank IS NOT DISTINCT FROM k.rank
       LEFT JOIN run_ev v ON v.run_id = k.run_id
       LEFT JOIN gap g ON g.run_id = k.run_id AND g.rank IS NOT DISTINCT FROM k.rank
       LEFT JOIN lines_end le ON le.run_id = k.run_id AND le.rank IS NOT DISTINCT FROM k.rank),
quiet AS (
  SELECT *, round(epoch(run_end) - epoch(active_until), 1) AS quiet_s,
         -- every rank that left a trace silent (no trace event, no stderr line) for longer than its threshold
         bool_and(CASE WHEN last_ts IS NOT NULL THEN epoch(run_end) - epoch(active_until) >= threshold_s END)
           OVER (PARTITION BY run_id) AS all_quiet
  FROM facts),
decided AS (
  SELECT *, round(epoch(run_end) - epoch(last_ts), 1) AS silent_s,
    CASE
      WHEN record_means = 'completed' THEN 'record_exit0'
      WHEN timeout THEN 'timeout'
      WHEN crash THEN 'crash'
      WHEN exc THEN 'exception'
      WHEN own_kill THEN 'own_kill'
      WHEN outside_kill AND all_quiet AND last_ts IS NOT NULL THEN 'silent_stop'
      WHEN any_hung AND (launcher_kill OR peer OR exit_failed OR no_evidence) THEN 'same_hang'
      WHEN launcher_kill THEN 'launcher_kill'
      WHEN peer OR exit_failed THEN 'exit_failed'
      WHEN exit0 THEN 'exit0'
      WHEN open_compiles > 0 AND quiet_s >= threshold_s THEN 'open_compile'
      WHEN outside_kill AND quiet_s >= threshold_s THEN 'silent_kill'
      WHEN outside_kill THEN 'outside_kill'
      WHEN record_means IN ('failed', 'crashed') THEN 'record'
      ELSE 'none'
    END AS rule
  FROM quiet)
SELECT run_id, run, rank,
  CASE rule WHEN 'record_exit0' THEN 'completed' WHEN 'timeout' THEN 'hung' WHEN 'crash' THEN 'crashed' WHEN 'exception' THEN 'failed'
            WHEN 'own_kill' THEN 'killed' WHEN 'same_hang' THEN 'hung' WHEN 'launcher_kill' THEN 'killed'
            WHEN 'exit_failed' THEN 'failed' WHEN 'exit0' THEN 'completed' WHEN 'open_compile' THEN 'hung'
            WHEN 'silent_kill' THEN 'hung' WHEN 'silent_stop' THEN 'hung' WHEN 'outside_kill' THEN 'killed' WHEN 'record' THEN record_means ELSE 'unknown' END AS outcome,
  CASE rule
    WHEN 'record_exit0' THEN 'pt2logs run recorded exit status 0'
    WHEN 'timeout' THEN concat('timed out in ', coalesce(ev.collective, 'a collective'),
                               CASE WHEN ev.timeout_ms IS NOT NULL THEN concat(' (timeout ', ev.timeout_ms // 1000, ' s)') ELSE '' END)
    WHEN 'crash' THEN concat('crashed: ', coalesce(ev.signal, ev.exc_type, ev.kind))
    WHEN 'exception' THEN concat(coalesce(ev.exc_type, 'an exception'), CASE WHEN ev.location IS NOT NULL THEN concat(' at ', ev.location) ELSE '' END)
    WHEN 'own_kill' THEN CASE WHEN ev.kind = 'exit_status' THEN concat('ended by ', coalesce(ev.signal, 'a signal'))
                              ELSE concat('killed by ', coalesce(ev.signal, 'a signal'), ' (not sent by the launcher)') END
    WHEN 'same_hang' THEN concat('stuck in the same hang: ', CASE WHEN ev.kind = 'peer_closed' THEN 'its peer closed the connection'
                                 WHEN launcher_kill THEN 'then the launcher killed it' WHEN peer THEN 'its peer closed the connection'
                                 WHEN exit_failed THEN 'then it exited' ELSE 'no line of its own' END)
    WHEN 'launcher_kill' THEN concat('killed by the launcher (', coalesce(ev.signal, 'SIGTERM'), ')',
                                     CASE WHEN outside_kill THEN ' when the job was stopped from outside' ELSE ' after another process ended' END)
    WHEN 'exit_failed' THEN CASE WHEN peer THEN 'its peer closed the connection' ELSE concat('exit status ', coalesce(ev.exit_code::VARCHAR, '?')) END
    WHEN 'exit0' THEN 'exit status 0'
    WHEN 'open_compile' THEN concat('compile ', open_compile_ids, ' began and never finished (in ', open_phase, ')')
    WHEN 'silent_kill' THEN concat('silent ', round(quiet_s), ' s before the job was killed')
    WHEN 'silent_stop' THEN concat('stopped from outside after ', round(quiet_s), ' s of silence (its longest gap before: ',
                                   round(coalesce(gap_s, 0), 1), ' s)')
    WHEN 'outside_kill' THEN 'the job was stopped from outside (the launcher got a signal)'
    WHEN 'record' THEN ev.text
    ELSE CASE WHEN open_compiles > 0 THEN concat('the log ends inside compile ', open_compile_ids, coalesce(' (' || open_phase || ')', ''),
                                                 ' with no exit record: crashed or killed while compiling?')
              WHEN last_ts IS NOT NULL THEN 'no exit status in the logs' ELSE 'no evidence' END
  END AS why,
  rule, ev.file AS evidence_file, ev.line_no AS evidence_line, ev.kind AS evidence_kind, ev.text AS evidence,
  ev.exit_code AS exit_code, ev.signal AS signal, first_ts, last_ts AS last_event_at, run_end, run_end_from, silent_s,
  round(threshold_s, 1) AS threshold_s, round(gap_s, 1) AS gap_s, quiet_s, compiles, open_compiles, open_compile_ids, open_phase, first_own_line, root_cause
-- a job stopped from outside after a silence: the line is the stop's (the agent's death signal), not the launcher's closing signal
FROM (SELECT * REPLACE (CASE WHEN rule = 'silent_stop' AND run_level IS NOT NULL THEN run_level ELSE ev END AS ev) FROM decided)"""

#: one row per run: how it ended (the run-level rules, see the module docstring of run_outcomes.sql)
RUN_OUTCOMES = """CREATE OR REPLACE MACRO run_outcome_rows(p_run, p_since, p_until, p_tag) AS TABLE
WITH ro AS (SELECT * FROM rank_outcomes(p_run, p_since, p_until, p_tag)),
per_run AS (
  SELECT run_id, any_value(run) AS run, count(*) AS ranks,
         bool_or(outcome = 'hung') AS any_hung,
         count(*) FILTER (WHERE outcome = 'completed') AS completed_ranks,
         arg_min(rank, epoch(last_event_at)) AS silent_first_rank,
         min(last_event_at) AS silent_first_at,
         max(run_end) AS run_end, any_value(run_end_from) AS run_end_from,
         string_agg(outcome || ' ' || coalesce(rank::VARCHAR, '-'), ', ' ORDER BY rank) AS rank_outcomes,
         arg_min({'rank': rank, 'outcome': outcome, 'why': why, 'file': evidence_file, 'line': evidence_line, 'text': evidence},
                 [CASE WHEN outcome = 'hung' AND rule = 'timeout' THEN 0 WHEN outcome = 'hung' THEN 1 ELSE 2 END,
                  coalesce(first_own_line, 1e12), CASE WHEN root_cause THEN 0 ELSE 1 END, coalesce(epoch(last_event_at), 0)])
           FILTER (WHERE outcome = 'hung' OR (outcome IN ('crashed', 'failed', 'killed') AND first_own_line IS NOT NULL)) AS root,
         arg_min({'rank': rank, 'outcome': outcome, 'why': why, 'file': evidence_file, 'line': evidence_line, 'text': evidence},
                 CASE outcome WHEN 'killed' THEN 0 WHEN 'failed' THEN 1 WHEN 'crashed' THEN 2 ELSE 3 END) AS other,
         arg_min({'rank': rank, 'why': why}, coalesce(rank, -1)) FILTER (WHERE rule = 'none' AND open_compiles > 0) AS open_end
  FROM ro GROUP BY run_id),
rec AS (
  SELECT run_id, arg_max(means, line_no) FILTER (WHERE kind = 'exit_status') AS record_means,
         arg_max(text, line_no) FILTER (WHERE kind = 'exit_status') AS record_text,
         arg_max(file, line_no) FILTER (WHERE kind = 'exit_status') AS record_file,
         arg_min({'file': file, 'line': line_no, 'text': text}, line_no)
           FILTER (WHERE kind <> 'exit_status' AND rank IS NULL AND means = 'killed' AND NOT coalesce(secondary, false)) AS outside
  FROM outcome_evidence WHERE run_id IN (SELECT run_id FROM per_run) GROUP BY run_id),
decided AS (
  SELECT p.*, x.record_means, x.record_text, x.record_file, x.outside,
         CASE WHEN x.record_means = 'completed' THEN 'completed'
              WHEN p.any_hung THEN 'hung'
              WHEN p.root IS NOT NULL THEN p.root.outcome
              WHEN x.record_means IS NOT NULL AND x.record_means <> 'info' THEN x.record_means
              WHEN x.outside IS NOT NULL THEN 'killed'
              WHEN p.completed_ranks = p.ranks THEN 'completed'
              WHEN p.other.outcome IN ('killed', 'failed', 'crashed') THEN p.other.outcome
              ELSE 'unknown' END AS outcome
  FROM per_run p LEFT JOIN rec x USING (run_id))
SELECT d.run_id, d.run, d.outcome,
       CASE WHEN d.outcome = 'completed' AND d.record_means = 'completed' THEN 'pt2logs run recorded exit status 0'
            WHEN d.root IS NOT NULL AND d.outcome = d.root.outcome
              THEN concat(CASE WHEN d.root.rank IS NOT NULL THEN concat('rank ', d.root.rank, ': ') ELSE '' END, d.root.why)
            WHEN d.record_text IS NOT NULL THEN d.record_text
            WHEN d.outside IS NOT NULL AND d.outcome = 'killed' THEN 'the job was stopped from outside: the launcher got a signal'
            WHEN d.outcome = 'completed' THEN 'every rank completed'
            WHEN d.other.outcome = d.outcome AND d.outcome IN ('killed', 'failed', 'crashed')
              THEN concat(CASE WHEN d.other.rank IS NOT NULL THEN concat('rank ', d.other.rank, ': ') ELSE '' END, d.other.why)
            WHEN d.outcome = 'unknown' AND d.open_end IS NOT NULL
              THEN concat(CASE WHEN d.open_end.rank IS NOT NULL THEN concat('rank ', d.open_end.rank, ': ') ELSE '' END, d.open_end.why)
            ELSE 'no exit status in the logs' END AS why,
       CASE WHEN d.root IS NOT NULL AND d.outcome = d.root.outcome THEN d.root.rank END AS root_rank,
       coalesce(CASE WHEN d.root IS NOT NULL AND d.outcome = d.root.outcome THEN d.root.file END, d.record_file,
                CASE WHEN d.outcome = 'killed' THEN d.outside.file END) AS evidence_file,
       CASE WHEN d.root IS NOT NULL AND d.outcome = d.root.outcome THEN d.root.line WHEN d.record_file IS NOT NULL THEN 1
            WHEN d.outcome = 'killed' THEN d.outside.line END AS evidence_line,
       coalesce(CASE WHEN d.root IS NOT NULL AND d.outcome = d.root.outcome THEN d.root.text END, d.record_text,
                CASE WHEN d.outcome = 'killed' THEN d.outside.text END) AS evidence,
       d.ranks, d.rank_outcomes, d.silent_first_rank, d.silent_first_at,
       round(epoch(d.run_end) - epoch(d.silent_first_at), 1) AS silent_s, d.run_end, d.run_end_from
FROM decided d"""

#: added to :data:`pt2logs.query.views.MACROS`
OUTCOME_MACROS = [RANK_OUTCOMES, RUN_OUTCOMES]

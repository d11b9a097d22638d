-- title: How each rank ended
-- what: How each rank of the selected runs ended (completed, failed, crashed, hung, killed, unknown), decided by the rules of pt2logs.query.outcome_rules (docs/architecture.md, "Run outcomes"; the rules in order there) from outcome_evidence, files, compilation_metrics, compile_phases, events and log_lines. One row per rank (one with rank NULL for a run without ranks). A run whose live transaction's rows were kept after its commit is read from them (_rank_outcomes_kept: pt2logs.query.kept_rows), the others decided here; the answer is the same.
-- params: p_run (a run id, id prefix, name or name prefix; NULL: every run), p_since (runs started at or after; NULL: no bound), p_until (runs started before; NULL: no bound), p_tag (KEY=VALUE; NULL: any)
-- fills: stderr_formats, trace_formats
-- columns: run_id, run, rank, outcome (completed, failed, crashed, hung, killed or unknown), why (in words), rule (the rule that decided), evidence_file, evidence_line, evidence_kind, evidence (the deciding line), exit_code, signal, first_ts, last_event_at (the rank's first and last trace event), run_end, run_end_from (the run's end and where it was read), silent_s (from the last trace event to the run's end), threshold_s (the silence that makes the rank hung), gap_s (its rhythm: its largest gap between trace events or stderr lines), quiet_s (its silence counting its stderr lines), compiles, open_compiles, open_compile_ids, open_phase (compiles begun and never finished), first_own_line (the first line of its own failure, crash or kill), root_cause (ChildFailedError names it the root cause)
CREATE OR REPLACE MACRO rank_outcomes(p_run, p_since, p_until, p_tag) AS TABLE
WITH sel0 AS (SELECT run_id FROM selected_runs(p_run, p_since, p_until, p_tag)),
-- the rows kept for a run's live transaction (pt2logs.query.kept_rows) are read; the other runs are decided here
kept AS (SELECT * EXCLUDE (txn) FROM _rank_outcomes_kept WHERE run_id IN (SELECT run_id FROM sel0)),
sel AS (SELECT run_id FROM sel0 WHERE run_id NOT IN (SELECT run_id FROM kept)),
r AS (SELECT run_id, name, ranks, started_at FROM runs WHERE run_id IN (SELECT run_id FROM sel)),
ev AS (SELECT *, CASE WHEN means = 'hung' THEN 1 WHEN means = 'crashed' THEN 2 WHEN kind IN ('exception', 'oom') THEN 3
                      WHEN means = 'killed' AND NOT coalesce(secondary, false) THEN 4 WHEN means = 'killed' THEN 5
                      WHEN kind = 'peer_closed' THEN 6 WHEN means = 'failed' THEN 7 WHEN means = 'completed' THEN 8 ELSE 9 END AS pri
       FROM outcome_evidence WHERE run_id IN (SELECT run_id FROM sel)),
f AS (SELECT run_id, rank, format, first_ts, last_ts, mtime FROM files WHERE run_id IN (SELECT run_id FROM sel)),
err2 AS (SELECT run_id, max(last_ts) AS err_last, max(mtime) AS err_mtime FROM f WHERE format IN {{stderr_formats}} GROUP BY run_id),
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
         (SELECT max(mtime) FROM f WHERE f.run_id = r.run_id AND f.format NOT IN {{trace_formats}}
            AND f.mtime <= coalesce((SELECT max(last_ts) FROM f t WHERE t.run_id = r.run_id AND t.format IN {{trace_formats}}), f.mtime) + INTERVAL 7 DAY)
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
tr AS (SELECT run_id, rank, min(first_ts) AS first_ts, max(last_ts) AS last_ts FROM f WHERE format IN {{trace_formats}} GROUP BY ALL),
cm AS (SELECT run_id, rank, count(*) AS compiles, max(entire_frame_compile_time_s) AS longest_compile_s
       FROM compilation_metrics WHERE kind = 'compilation_metrics' AND run_id IN (SELECT run_id FROM sel) GROUP BY ALL),
-- a compile's root span: a frame's (dynamo), or an AOTInductor compile's (no compile id: named AOTInductor)
op AS (SELECT run_id, rank, count(*) FILTER (WHERE phase IN ('entire_frame_compile', 'compile_fx_aot')) AS open_compiles,
              string_agg(DISTINCT coalesce(compile_id, CASE WHEN phase = 'compile_fx_aot' THEN 'AOTInductor' END), ' ' ORDER BY coalesce(compile_id, CASE WHEN phase = 'compile_fx_aot' THEN 'AOTInductor' END))
                FILTER (WHERE phase IN ('entire_frame_compile', 'compile_fx_aot')) AS open_compile_ids,
              arg_max(phase, depth) AS open_phase
       FROM compile_phases WHERE duration_us IS NULL AND NOT coalesce(is_instant, false)
         AND run_id IN (SELECT run_id FROM sel) GROUP BY ALL),
e AS (
  SELECT run_id, rank,
         bool_or(pri = 1) AS timeout, bool_or(pri = 2) AS crash, bool_or(pri = 3) AS exc, bool_or(pri = 4) AS own_kill,
         bool_or(pri = 5) AS launcher_kill, bool_or(pri = 6) AS peer, bool_or(pri = 7) AS exit_failed, bool_or(pri = 8) AS exit0,
         min(line_no) FILTER (WHERE pri <= 4 OR pri = 7) AS first_own_line, bool_or(coalesce(root_cause, false)) AS root_cause,
         arg_min({'file': file, 'line_no': line_no, 'kind': kind, 'text': text, 'exit_code': exit_code, 'signal': signal,
                  'exc_type': exc_type, 'location': location, 'collective': collective, 'timeout_ms': timeout_ms},
                 pri * 1000000000000 + coalesce(line_no, 0)) AS ev
  FROM ev GROUP BY ALL),
run_ev AS (
  SELECT run_id, bool_or(pri = 1) AS any_hung,
         bool_or(rank IS NULL AND pri = 4 AND kind <> 'exit_status') OR bool_or(kind = 'exit_status' AND means = 'killed') AS outside_kill,
         arg_max(means, line_no) FILTER (WHERE kind = 'exit_status') AS record_means,
         arg_min({'file': file, 'line_no': line_no, 'kind': kind, 'text': text, 'exit_code': exit_code, 'signal': signal,
                  'exc_type': exc_type, 'location': location, 'collective': collective, 'timeout_ms': timeout_ms},
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
    WHEN 'open_compile' THEN concat(CASE WHEN open_compile_ids = 'AOTInductor' THEN 'an AOTInductor compile' ELSE 'compile ' || open_compile_ids END, ' began and never finished (in ', open_phase, ')')
    WHEN 'silent_kill' THEN concat('silent ', round(quiet_s), ' s before the job was killed')
    WHEN 'silent_stop' THEN concat('stopped from outside after ', round(quiet_s), ' s of silence (its longest gap before: ',
                                   round(coalesce(gap_s, 0), 1), ' s)')
    WHEN 'outside_kill' THEN 'the job was stopped from outside (the launcher got a signal)'
    WHEN 'record' THEN ev.text
    ELSE CASE WHEN open_compiles > 0 THEN concat('the log ends inside ', CASE WHEN open_compile_ids = 'AOTInductor' THEN 'an AOTInductor compile' ELSE 'compile ' || open_compile_ids END, coalesce(' (' || open_phase || ')', ''),
                                                 ' with no exit record: crashed or killed while compiling?')
              WHEN last_ts IS NOT NULL THEN 'no exit status in the logs' ELSE 'no evidence' END
  END AS why,
  rule, ev.file AS evidence_file, ev.line_no AS evidence_line, ev.kind AS evidence_kind, ev.text AS evidence,
  ev.exit_code AS exit_code, ev.signal AS signal, first_ts, last_ts AS last_event_at, run_end, run_end_from, silent_s,
  round(threshold_s, 1) AS threshold_s, round(gap_s, 1) AS gap_s, quiet_s, compiles, open_compiles, open_compile_ids, open_phase, first_own_line, root_cause
-- a job stopped from outside after a silence: the line is the stop's (the agent's death signal), not the launcher's closing signal
FROM (SELECT * REPLACE (CASE WHEN rule = 'silent_stop' AND run_level IS NOT NULL THEN run_level ELSE ev END AS ev) FROM decided)
UNION ALL BY NAME
SELECT * FROM kept;

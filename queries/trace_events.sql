-- title: Trace events (Perfetto / Chrome trace)
-- question: What happened when, per run and rank, as a timeline: every compile of every frame and every compile phase as a span, every graph break, recompile, cache lookup and instant marker as a point with its reason? What `pt2logs export perfetto` draws; times in µs since the run's first event.
-- params: run_id (optional: id, id prefix, name or name prefix; default: the newest run, when since, until and tag are not given either), since (optional), until (optional), tag (optional: key=value)
-- ph: X = a span (ts, dur), i = an instant. kind: compile (compilation_metrics: one per compile attempt),
-- phase (compile_phases spans), graph_break, recompile (its failed guard in reason), cache (a lookup:
-- hit, miss or bypass), marker (compile_phases instants), unfinished (a span begun and never ended,
-- or a compile without a duration: placed at its start). The export draws a compile's events on its
-- frame's lane (analysis/identity.compile_lane: the compile id without its compile number). An event
-- with no time of its own is placed at its compile's start, else at the rank's first event
-- (time_known = false). With no selection at all the newest run only: one run is a timeline, every event of a
-- fleet is not (give --since, --until or --tag for several runs).
WITH sel AS (SELECT run_id FROM selected_runs_or_newest($run_id, $since, $until, $tag)),
compiles AS (
  SELECT run_id, rank, compile_id, line_no, kind AS metric, co_name, co_file, co_filename, co_firstlineno,
         fail_type, recompile_reason, graph_op_count, guard_count, cache_size,
         coalesce(start_time_us, epoch_us(ts)) AS start_us,
         coalesce(duration_us, TRY_CAST(round(entire_frame_compile_time_s * 1e6) AS BIGINT)) AS dur_us
  FROM compilation_metrics
  WHERE run_id IN (SELECT run_id FROM sel) AND since_partition(ingest_date, $since)
    AND kind IN ('compilation_metrics', 'bwd_compilation_metrics')),
starts AS (SELECT run_id, rank, compile_id, min(start_us) AS start_us FROM compiles GROUP BY ALL),
ev AS (
  SELECT run_id, rank, CASE WHEN dur_us IS NULL THEN 'i' ELSE 'X' END AS ph,
         CASE WHEN dur_us IS NULL THEN 'unfinished' ELSE 'compile' END AS kind,
         concat_ws(' ', CASE WHEN metric = 'bwd_compilation_metrics' THEN 'backward' END,
                   '[' || coalesce(compile_id, '?') || ']', coalesce(co_name, '?')) AS name,
         compile_id, start_us AS ts_us, dur_us, coalesce(fail_type, recompile_reason) AS reason,
         json_object('function', co_name, 'file', function_file(co_file, co_filename), 'line', co_firstlineno,
                     'failure', fail_type, 'recompile_reason', recompile_reason, 'graph_ops', graph_op_count,
                     'guards', guard_count, 'cache_size', cache_size, 'record', metric) AS args,
         line_no
  FROM compiles
  UNION ALL
  SELECT run_id, rank, CASE WHEN is_instant OR duration_us IS NULL THEN 'i' ELSE 'X' END,
         CASE WHEN is_instant THEN 'marker' WHEN duration_us IS NULL THEN 'unfinished' ELSE 'phase' END,
         phase, compile_id, start_us, CASE WHEN NOT is_instant THEN duration_us END, NULL,
         json_object('stage', stage, 'parent', parent_phase, 'depth', depth, 'category', category, 'args', TRY(json(args))),
         line_no
  FROM compile_phases
  WHERE run_id IN (SELECT run_id FROM sel) AND since_partition(ingest_date, $since)
  UNION ALL
  SELECT run_id, rank, 'i', 'graph_break', 'graph break: ' || coalesce(gb_type, '?'), compile_id, epoch_us(ts), NULL,
         reason,
         json_object('gb_id', gb_id, 'type', gb_type, 'user_frame', frame_file || ':' || frame_line,
                     'library_frame', lib_file || ':' || lib_func, 'function', co_name, 'occurrences', occurrences,
                     'hints', hints),
         line_no
  FROM graph_breaks
  WHERE run_id IN (SELECT run_id FROM sel) AND since_partition(ingest_date, $since)
  UNION ALL
  SELECT run_id, rank, 'i', 'recompile', CASE WHEN is_limit_hit THEN 'recompile limit hit' ELSE 'recompile: ' || coalesce(cause, '?') END,
         compile_id, epoch_us(ts), NULL, reason,
         json_object('cause', cause, 'guard_kind', guard_kind, 'guard_source', guard_source, 'expected', guard_expected,
                     'actual', guard_actual, 'after', prev_compile_id, 'function', co_name, 'limit_hit', is_limit_hit),
         line_no
  FROM recompiles
  WHERE run_id IN (SELECT run_id FROM sel) AND since_partition(ingest_date, $since)
  UNION ALL
  SELECT run_id, rank, 'i', 'cache', coalesce(cache, '?') || ' cache ' || coalesce(outcome, '?'), compile_id, epoch_us(ts), NULL,
         reason, json_object('cache', cache, 'outcome', outcome, 'key', key, 'time_saved_ms', time_saved_ms),
         line_no
  FROM cache_events
  WHERE run_id IN (SELECT run_id FROM sel) AND since_partition(ingest_date, $since)),
placed AS (
  SELECT e.*, e.ts_us IS NOT NULL AS time_known,
         coalesce(e.ts_us, s.start_us, min(e.ts_us) OVER (PARTITION BY e.run_id, e.rank),
                  min(e.ts_us) OVER (PARTITION BY e.run_id)) AS at_us
  FROM ev e LEFT JOIN starts s ON s.run_id = e.run_id AND s.rank IS NOT DISTINCT FROM e.rank AND s.compile_id = e.compile_id)
SELECT p.run_id, r.name AS run, p.rank, p.ph, p.kind, p.name, p.compile_id,
       p.at_us - min(p.at_us) OVER (PARTITION BY p.run_id) AS ts_us, p.dur_us,
       p.reason, p.args, p.time_known,
       min(p.at_us) OVER (PARTITION BY p.run_id) AS run_start_us
FROM placed p JOIN runs r USING (run_id)
ORDER BY r.name, p.run_id, p.rank NULLS FIRST, ts_us, p.dur_us DESC NULLS LAST, p.kind, p.line_no

-- title: Compile-time trend
-- question: Is compile time going up or down? Totals per day or week, optionally split by a tag (e.g. model). Counts and seconds add up every rank of every selected run.
-- params: bucket (optional: day or week, default day), by (optional: a tag key, e.g. model), since (optional), until (optional), tag (optional: key=value), run_id (optional)
WITH per_run AS (
  SELECT r.run_id, r.started_at,
         coalesce(tag_value(r.tags, $by), '(none)') AS grp
  FROM runs r
  WHERE r.run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(r.ingest_date, $since) AND r.started_at IS NOT NULL),
m AS (
  SELECT run_id, sum(entire_frame_compile_time_s) AS compile_s, count(*) AS compiles,
         count(*) FILTER (WHERE recompile_reason IS NOT NULL) AS recompiles,
         count(*) FILTER (WHERE fail_type IS NOT NULL) AS failures
  FROM compilation_metrics WHERE kind = 'compilation_metrics' GROUP BY run_id)
SELECT date_trunc(CASE WHEN $bucket = 'week' THEN 'week' ELSE 'day' END, p.started_at)::DATE AS period,
       CASE WHEN $by IS NULL THEN 'all runs' ELSE p.grp END AS "group",
       count(*) AS runs,
       round(coalesce(sum(m.compile_s), 0), 3) AS compile_s,
       round(coalesce(sum(m.compile_s), 0) / count(*), 3) AS compile_s_per_run,
       coalesce(sum(m.compiles), 0) AS compiles,
       coalesce(sum(m.recompiles), 0) AS recompiles,
       coalesce(sum(m.failures), 0) AS failures
FROM per_run p LEFT JOIN m USING (run_id)
GROUP BY ALL
ORDER BY period, "group";

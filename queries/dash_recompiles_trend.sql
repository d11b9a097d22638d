-- title: Recompiles by cause, over time
-- question: Why do we recompile, day by day (or week by week)? Recompiles per period and cause, with the runs affected. Counts and seconds add up every rank of every selected run.
-- params: bucket (optional: day or week; default day, week when the runs span over 120 days), run_id (optional), since (optional), until (optional), tag (optional: key=value)
-- The period bucket is chosen as in dash_compile_time_trend, so the two charts line up.
WITH sel AS (
  SELECT run_id, started_at FROM runs
  WHERE run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND started_at IS NOT NULL),
bk AS (
  SELECT CASE WHEN $bucket IN ('day', 'week') THEN $bucket
              WHEN max(started_at) - min(started_at) > INTERVAL 120 DAY THEN 'week' ELSE 'day' END AS bucket
  FROM sel),
per_run AS (SELECT s.run_id, bk.bucket, date_trunc(bk.bucket, s.started_at)::DATE AS period FROM sel s, bk),
period_runs AS (SELECT period, count(*) AS runs_in_period FROM per_run GROUP BY period)
SELECT p.period, (p.period + CASE WHEN p.bucket = 'week' THEN 7 ELSE 1 END)::DATE AS period_end, p.bucket,
       x.cause,
       sum(x.n)::BIGINT AS recompiles,
       sum(x.limit_hits)::BIGINT AS limit_hits,
       count(DISTINCT x.run_id) AS runs,
       min(pr.runs_in_period) AS runs_in_period,
       count(DISTINCT (x.co_name, x.fn_file, x.fn_line)) AS functions
-- each run's recompiles counted by cause and frame: run_facts() (kept per commit)
FROM run_facts($run_id, $since, $until, $tag) x JOIN per_run p USING (run_id) JOIN period_runs pr USING (period)
WHERE x.what = 'recompile'
GROUP BY p.period, p.bucket, x.cause
ORDER BY p.period, recompiles DESC, x.cause;

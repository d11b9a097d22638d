-- dash_recompiles_trend as it was before run_facts() (it read the tables, not each run's kept facts); the oracle of queries/dash_recompiles_trend.sql
-- (tests/test_run_facts.py).
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
       count(*) AS recompiles,
       count(*) FILTER (WHERE x.is_limit_hit) AS limit_hits,
       count(DISTINCT x.run_id) AS runs,
       min(pr.runs_in_period) AS runs_in_period,
       count(DISTINCT (x.co_name, function_file(x.co_file, x.co_filename), function_line(x.co_file_kind, x.co_firstlineno))) AS functions
FROM recompiles x JOIN per_run p USING (run_id) JOIN period_runs pr USING (period)
GROUP BY p.period, p.bucket, x.cause
ORDER BY p.period, recompiles DESC, x.cause;

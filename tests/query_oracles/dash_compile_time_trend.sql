-- dash_compile_time_trend as it was before run_facts() (it read the tables, not each run's kept facts); the oracle of queries/dash_compile_time_trend.sql
-- (tests/test_run_facts.py).
WITH sel AS (
  SELECT r.run_id, r.started_at,
         coalesce(tag_value(r.tags, $by), '(no ' || $by || ' tag)') AS grp
  FROM runs r
  WHERE r.run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND r.started_at IS NOT NULL),
bk AS (
  SELECT CASE WHEN $bucket IN ('day', 'week') THEN $bucket
              WHEN max(started_at) - min(started_at) > INTERVAL 120 DAY THEN 'week' ELSE 'day' END AS bucket
  FROM sel),
per_run AS (
  SELECT s.run_id, s.grp, bk.bucket, date_trunc(bk.bucket, s.started_at)::DATE AS period FROM sel s, bk),
c AS (SELECT * FROM frame_compile_stages() WHERE run_id IN (SELECT run_id FROM sel)),
m AS (
  SELECT run_id, sum(total) AS total, sum(total - backend) AS dynamo, sum(backend - inductor) AS aot,
         sum(inductor - codegen) AS inductor, sum(codegen) AS codegen
  FROM c GROUP BY run_id),
pr AS (SELECT p.*, coalesce(m.total, 0) AS total, coalesce(m.dynamo, 0) AS dynamo, coalesce(m.aot, 0) AS aot,
              coalesce(m.inductor, 0) AS inductor, coalesce(m.codegen, 0) AS codegen
       FROM per_run p LEFT JOIN m USING (run_id)),
phases AS (
  SELECT period, bucket, 'dynamo (tracing, guards)' AS series, 1 AS ord, count(*) AS runs, sum(dynamo) AS seconds FROM pr WHERE $by IS NULL GROUP BY ALL
  UNION ALL SELECT period, bucket, 'aot autograd', 2, count(*), sum(aot) FROM pr WHERE $by IS NULL GROUP BY ALL
  UNION ALL SELECT period, bucket, 'inductor (lowering, scheduling)', 3, count(*), sum(inductor) FROM pr WHERE $by IS NULL GROUP BY ALL
  UNION ALL SELECT period, bucket, 'inductor code gen', 4, count(*), sum(codegen) FROM pr WHERE $by IS NULL GROUP BY ALL),
top_groups AS (
  SELECT grp, row_number() OVER (ORDER BY sum(total) DESC, grp) AS rk FROM pr WHERE $by IS NOT NULL GROUP BY grp),
groups AS (
  SELECT period, bucket,
         CASE WHEN t.rk <= least(coalesce(TRY_CAST($groups AS INTEGER), 8), 20) THEN pr.grp ELSE 'other' END AS series,
         min(t.rk) AS ord, count(*) AS runs, sum(total) AS seconds
  FROM pr JOIN top_groups t USING (grp)
  WHERE $by IS NOT NULL
  GROUP BY ALL)
SELECT period, (period + CASE WHEN bucket = 'week' THEN 7 ELSE 1 END)::DATE AS period_end, bucket,
       series, ord::INTEGER AS ord, runs,
       round(seconds, 3) AS seconds, round(seconds / runs, 3) AS s_per_run
FROM (SELECT * FROM phases UNION ALL SELECT * FROM groups)
ORDER BY period, ord, series;

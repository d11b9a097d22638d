-- title: Compile time per run, over time
-- question: How much compile time does a run spend, per day (or week), split by compile phase or by a tag such as model? Counts and seconds add up every rank of every selected run.
-- params: by (optional: a tag key, e.g. model; default: split by phase), bucket (optional: day or week; default day, week when the runs span over 120 days), groups (optional: tag values shown, default 8, the rest are 'other'), run_id (optional), since (optional), until (optional), tag (optional: key=value)
-- Phases are the non-overlapping stages of compile_time_by_phase. seconds = total over the
-- period's runs (of the group); s_per_run = seconds / runs, so a period's phases stack up to the
-- mean compile time of its runs. Runs without compiles count (with 0 s).
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
-- each run's stages summed: run_facts() (kept per commit)
m AS (SELECT run_id, total, dynamo, aot, inductor, codegen FROM run_facts($run_id, $since, $until, $tag) WHERE what = 'run'),
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

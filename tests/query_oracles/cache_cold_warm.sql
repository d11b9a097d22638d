-- The quadratic formulation cache_cold_warm had before: each run joined with every earlier cold run and
-- list_intersect on their function lists. Kept as the oracle of queries/cache_cold_warm.sql (tests/test_query_rewrites.py);
-- one change: runs started at the same time are ordered by name, then id (before: any of them).
WITH sel AS (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)),
saved AS (  -- an AOTAutograd hit's time saved includes its FX graphs': per compile, the larger of the two
  SELECT run_id, greatest(coalesce(sum(time_saved_ms) FILTER (WHERE cache = 'aotautograd'), 0),
                          coalesce(sum(time_saved_ms) FILTER (WHERE cache <> 'aotautograd'), 0)) AS s
  FROM cache_events WHERE outcome = 'hit' GROUP BY run_id, rank, file, compile_id),
per_run AS (
  SELECT r.run_id, r.name, r.started_at, coalesce(CAST(r.tags AS VARCHAR), '{}') AS tags,
         (SELECT round(sum(entire_frame_compile_time_s), 3) FROM compilation_metrics m
          WHERE m.run_id = r.run_id AND m.kind = 'compilation_metrics') AS compile_s,
         (SELECT count(*) FROM compilation_metrics m WHERE m.run_id = r.run_id AND m.kind = 'compilation_metrics') AS compiles,
         (SELECT list(DISTINCT co_name) FROM compilation_metrics m
          WHERE m.run_id = r.run_id AND m.kind = 'compilation_metrics' AND co_name IS NOT NULL) AS fns,
         count(c.outcome) AS lookups,
         count(*) FILTER (WHERE c.outcome = 'hit') AS hits,
         count(*) FILTER (WHERE c.outcome = 'miss') AS misses,
         count(*) FILTER (WHERE c.outcome = 'bypass') AS bypasses,
         (SELECT round(coalesce(sum(s), 0) / 1e3, 3) FROM saved WHERE saved.run_id = r.run_id) AS saved_s
  FROM runs r LEFT JOIN cache_events c USING (run_id)
  GROUP BY ALL),
rated AS (
  SELECT *, CASE WHEN lookups = 0 THEN 'no cache lookups' WHEN hits = 0 THEN 'cold'
                 WHEN hits = lookups THEN 'warm' ELSE 'partly warm' END AS state
  FROM per_run)
SELECT a.name AS run, a.started_at AS started, a.state, a.compile_s, a.compiles, a.lookups, a.hits, a.misses, a.bypasses,
       a.saved_s, c.name AS cold_run, c.compile_s AS cold_compile_s,
       CASE WHEN c.compile_s > 0 THEN round(100.0 * (a.compile_s - c.compile_s) / c.compile_s, 1) END AS vs_cold_pct,
       a.run_id
FROM rated a
LEFT JOIN rated c ON c.state = 'cold' AND c.tags = a.tags AND c.started_at < a.started_at
     -- the same program: the cold run compiled at least half of this run's functions
     AND len(list_intersect(coalesce(a.fns, []), coalesce(c.fns, []))) * 2 >= greatest(len(coalesce(a.fns, [])), 1)
WHERE a.run_id IN (SELECT run_id FROM sel)
QUALIFY row_number() OVER (PARTITION BY a.run_id ORDER BY c.started_at DESC NULLS LAST, c.name, c.run_id) = 1
ORDER BY a.started_at, a.name;

-- title: Cold and warm compile time per run
-- question: Per run, how did the compile caches do (lookups, hits, misses, bypasses, time saved), was it a cold start (no hit), a warm one (every lookup hit) or partly warm, and how does its compile time compare with the newest earlier cold run of the same tags?
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
-- compile_s: the run's frame compile time (compilation_metrics.entire_frame_compile_time_s, every rank);
-- saved_s: time the hits saved, as torch logged it (per compile the AOTAutograd hit's or its FX graphs');
-- vs_cold_pct: compile_s against that of `cold_run` (the newest earlier run with the same tags whose
-- lookups all missed and that compiled at least half of this run's functions: the same program; of runs
-- started at the same time, the first by name),
-- in % (-80: warm took a fifth of the cold run's time).
WITH sel AS (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)),
saved AS (  -- an AOTAutograd hit's time saved includes its FX graphs': per compile, the larger of the two
  SELECT run_id, greatest(coalesce(sum(time_saved_ms) FILTER (WHERE cache = 'aotautograd'), 0),
                          coalesce(sum(time_saved_ms) FILTER (WHERE cache <> 'aotautograd'), 0)) AS s
  FROM cache_events WHERE outcome = 'hit' GROUP BY run_id, rank, file, compile_id),
per_run AS (  -- one aggregate per table, joined by run (each run's rows read once)
  SELECT r.run_id, r.name, r.started_at, coalesce(CAST(r.tags AS VARCHAR), '{}') AS tags, m.compile_s,
         coalesce(m.compiles, 0) AS compiles, m.fns, coalesce(c.lookups, 0) AS lookups, coalesce(c.hits, 0) AS hits,
         coalesce(c.misses, 0) AS misses, coalesce(c.bypasses, 0) AS bypasses, round(coalesce(v.s, 0) / 1e3, 3) AS saved_s
  FROM runs r
  LEFT JOIN (SELECT run_id, round(sum(entire_frame_compile_time_s), 3) AS compile_s, count(*) AS compiles,
                    list(DISTINCT co_name) FILTER (WHERE co_name IS NOT NULL) AS fns
             FROM compilation_metrics WHERE kind = 'compilation_metrics' GROUP BY run_id) m USING (run_id)
  LEFT JOIN (SELECT run_id, count(outcome) AS lookups, count(*) FILTER (WHERE outcome = 'hit') AS hits,
                    count(*) FILTER (WHERE outcome = 'miss') AS misses, count(*) FILTER (WHERE outcome = 'bypass') AS bypasses
             FROM cache_events GROUP BY run_id) c USING (run_id)
  LEFT JOIN (SELECT run_id, sum(s) AS s FROM saved GROUP BY run_id) v USING (run_id)),
rated AS (
  SELECT *, CASE WHEN lookups = 0 THEN 'no cache lookups' WHEN hits = 0 THEN 'cold'
                 WHEN hits = lookups THEN 'warm' ELSE 'partly warm' END AS state,
         list_sort(coalesce(fns, [])) AS fset
  FROM per_run),
-- the same program, decided once per pair of function sets (runs of one program share theirs), from
-- the functions the two sets share (an inverted index: function -> sets), never run against run
fn_sets AS (
  SELECT fset, bool_or(state = 'cold') AS cold, bool_or(run_id IN (SELECT run_id FROM sel)) AS wanted FROM rated GROUP BY fset),
set_fns AS (SELECT fset, cold, wanted, unnest(fset) AS fn FROM fn_sets WHERE cold OR wanted),
programs AS (  -- (a's set, a cold run's set) where the cold set holds at least half of a's functions
  SELECT a.fset AS a_set, c.fset AS c_set
  FROM set_fns a JOIN set_fns c USING (fn)
  WHERE a.wanted AND c.cold
  GROUP BY a.fset, c.fset
  HAVING count(*) * 2 >= greatest(len(a.fset), 1)),
timeline AS (  -- per tags and cold set, in time: each selected run (once per cold set that counts) and the cold runs
  SELECT a.run_id AS a_id, a.tags, p.c_set AS fset, a.started_at, 0 AS cold_row, NULL::VARCHAR AS name, NULL::VARCHAR AS c_id
  FROM rated a JOIN programs p ON p.a_set = a.fset
  WHERE a.run_id IN (SELECT run_id FROM sel) AND a.started_at IS NOT NULL
  UNION ALL
  SELECT NULL, tags, fset, started_at, 1, name, run_id FROM rated WHERE state = 'cold' AND started_at IS NOT NULL),
newest AS (  -- for each, the cold run started last before it (ties: the first by name, as `runs` lists them)
  SELECT a_id, last_value(c_id IGNORE NULLS) OVER (PARTITION BY tags, fset ORDER BY started_at, cold_row, name DESC, c_id DESC
                                                   ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS c_id
  FROM timeline),
best AS (
  SELECT n.a_id, c.* FROM newest n JOIN rated c ON c.run_id = n.c_id
  WHERE n.a_id IS NOT NULL
  QUALIFY row_number() OVER (PARTITION BY n.a_id ORDER BY c.started_at DESC, c.name, c.run_id) = 1)
SELECT a.name AS run, a.started_at AS started, a.state, a.compile_s, a.compiles, a.lookups, a.hits, a.misses, a.bypasses,
       a.saved_s, c.name AS cold_run, c.compile_s AS cold_compile_s,
       CASE WHEN c.compile_s > 0 THEN round(100.0 * (a.compile_s - c.compile_s) / c.compile_s, 1) END AS vs_cold_pct,
       a.run_id
FROM rated a LEFT JOIN best c ON c.a_id = a.run_id
WHERE a.run_id IN (SELECT run_id FROM sel)
ORDER BY a.started_at, a.name;

-- cache_hit_rate as it was before run_facts() (it read the tables, not each run's kept facts); the oracle of queries/cache_hit_rate.sql
-- (tests/test_run_facts.py).
SELECT cache,
       count(*) AS lookups,
       count(*) FILTER (WHERE outcome = 'hit') AS hits,
       count(*) FILTER (WHERE outcome = 'miss') AS misses,
       count(*) FILTER (WHERE outcome = 'bypass') AS bypasses,
       round(100.0 * count(*) FILTER (WHERE outcome = 'hit') / count(*), 1) AS hit_pct,
       round(coalesce(sum(time_saved_ms) FILTER (WHERE outcome = 'hit'), 0) / 1e3, 3) AS saved_s,
       count(DISTINCT run_id) AS runs
FROM cache_events
WHERE run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(ingest_date, $since)
GROUP BY cache
ORDER BY lookups DESC, cache;

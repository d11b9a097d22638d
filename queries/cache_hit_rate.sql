-- title: Cache hit rate
-- question: How often do the compile caches (FX graph, AOTAutograd, ...) hit, and how much time do hits save? Counts and seconds add up every rank of every selected run.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
-- each run's lookups by cache: run_facts() (kept per commit)
WITH c AS (
  SELECT cache, sum(n)::BIGINT AS lookups, sum(hits)::BIGINT AS hits, sum(misses)::BIGINT AS misses,
         sum(bypasses)::BIGINT AS bypasses, sum(saved_ms) AS saved_ms, count(DISTINCT run_id) AS runs
  FROM run_facts($run_id, $since, $until, $tag)
  WHERE what = 'cache' AND since_partition(ingest_date, $since)
  GROUP BY cache)
SELECT cache,
       lookups,
       hits,
       misses,
       bypasses,
       round(100.0 * hits / lookups, 1) AS hit_pct,
       round(coalesce(saved_ms, 0) / 1e3, 3) AS saved_s,
       runs
FROM c
ORDER BY lookups DESC, cache;

-- dash_kernel_counts as it was before run_facts() (it read the tables, not each run's kept facts); the oracle of queries/dash_kernel_counts.sql
-- (tests/test_run_facts.py).
SELECT coalesce(backend, '?') AS backend, coalesce(kind, '?') AS kind,
       count(*) AS kernels,
       count(*) FILTER (WHERE cache_hit IS NOT TRUE) AS fresh,
       count(*) FILTER (WHERE cache_hit) AS from_cache,
       count(DISTINCT run_id) AS runs,
       count(DISTINCT (run_id, rank, compile_id)) AS compiles
FROM kernels
WHERE run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag))
GROUP BY ALL
ORDER BY kernels DESC, backend, kind;

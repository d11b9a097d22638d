-- title: Kernels by backend and kind
-- question: How many kernels do the selected runs generate, per backend and kind, and how many came from the FX-graph cache? Counts and seconds add up every rank of every selected run.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
-- Like kernel_counts, summed over runs (one row per backend and kind, however many runs).
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

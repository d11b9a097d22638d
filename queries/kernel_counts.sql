-- title: Kernel counts
-- question: How many kernels does each run generate, by backend and kind (fresh compiles vs FX-cache hits)? One row per rank of a multi-rank run (rank is NULL for a one-process run).
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
SELECT r.name AS run, k.rank, k.backend, k.kind,
       count(*) AS kernels,
       count(*) FILTER (WHERE k.cache_hit) AS from_cache,
       count(DISTINCT k.compile_id) AS compiles
FROM kernels k JOIN runs r USING (run_id)
WHERE k.run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(k.ingest_date, $since)
GROUP BY ALL
ORDER BY run, k.rank NULLS FIRST, kernels DESC, backend, kind;

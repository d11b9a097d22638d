-- title: Kernels per compile
-- question: Which compiles generate the most kernels, and of which kinds? One row per compile of one rank (rank is NULL for a one-process run).
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
SELECT r.name AS run, k.rank, k.compile_id, k.graph,
       count(*) AS kernels,
       count(*) FILTER (WHERE kind = 'pointwise') AS pointwise,
       count(*) FILTER (WHERE kind IN ('reduction', 'persistent_reduction')) AS reductions,
       count(*) FILTER (WHERE kind = 'template') AS templates,
       count(*) FILTER (WHERE kind NOT IN ('pointwise', 'reduction', 'persistent_reduction', 'template')) AS other,
       bool_or(k.cache_hit) AS from_cache
FROM kernels k JOIN runs r USING (run_id)
WHERE k.run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(k.ingest_date, $since)
GROUP BY ALL
ORDER BY kernels DESC, run, k.rank NULLS FIRST, compile_id, k.graph;

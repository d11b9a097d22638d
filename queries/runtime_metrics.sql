-- title: Runtime compile work
-- question: What compile work happened at run time, after the compile: Triton autotuning and CUDA-graph recording torch timed on the first runs of a compiled graph (the compilation_metrics_runtime / bwd_compilation_metrics_runtime records)? One row per compile id, forward or backward, and rank.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
SELECT r.name AS run, m.rank, m.compile_id,
       CASE WHEN m.kind LIKE 'bwd_%' THEN 'backward' ELSE 'forward' END AS graph,
       count(*) AS records,
       round(sum(m.duration_us) / 1e6, 3) AS runtime_s,
       round(sum(m.runtime_triton_autotune_time_us) / 1e6, 3) AS autotune_s,
       round(sum(m.runtime_cudagraphify_time_us) / 1e6, 3) AS cudagraphify_s,
       min(m.ts) AS first_at
FROM compilation_metrics m JOIN runs r USING (run_id)
WHERE m.run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(m.ingest_date, $since)
  AND m.kind LIKE '%\_runtime' ESCAPE '\'
GROUP BY ALL
ORDER BY run, m.rank NULLS FIRST, first_at, m.compile_id, graph;

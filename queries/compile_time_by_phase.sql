-- title: Compile time by phase
-- question: Where does compile time go? Frame compile time split into non-overlapping stages (from compilation_metrics), per run and rank (rank is NULL for a one-process run; pct is of the rank's total).
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
WITH m AS (
  SELECT * FROM frame_compile_stages()
  WHERE run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(ingest_date, $since)),
stages AS (
  SELECT run_id, rank, 'dynamo (tracing, guards)' AS phase, 1 AS ord, total - backend AS s FROM m
  UNION ALL SELECT run_id, rank, 'aot autograd', 2, backend - inductor FROM m
  UNION ALL SELECT run_id, rank, 'inductor (lowering, scheduling)', 3, inductor - codegen FROM m
  UNION ALL SELECT run_id, rank, 'inductor code gen', 4, codegen FROM m)
SELECT r.name AS run, stages.rank, phase, round(sum(s), 3) AS seconds,
       round(100 * sum(s) / nullif(sum(sum(s)) OVER (PARTITION BY r.name, stages.rank), 0), 1) AS pct
FROM stages JOIN runs r USING (run_id)
GROUP BY r.name, stages.rank, phase, ord
ORDER BY run, stages.rank NULLS FIRST, ord;

-- title: Phase breakdown from the trace
-- question: Which traced compile phases (dynamo_timed spans) take the most time? Phases nest, so their seconds overlap; calls and seconds add up every rank of every selected run.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), limit (optional, default 25)
SELECT phase, stage,
       count(*) AS calls,
       round(sum(duration_us) / 1e6, 3) AS seconds,
       round(avg(duration_us) / 1e3, 2) AS avg_ms,
       round(max(duration_us) / 1e3, 2) AS max_ms,
       count(DISTINCT run_id) AS runs
FROM compile_phases
WHERE NOT is_instant AND duration_us IS NOT NULL
  AND run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(ingest_date, $since)
GROUP BY phase, stage
ORDER BY seconds DESC, phase
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 25);

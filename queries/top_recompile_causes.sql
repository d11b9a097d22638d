-- title: Top recompile causes
-- question: Why do we recompile? Recompiles by cause, fleet-wide or in one run, with the runs affected. Counts and seconds add up every rank of every selected run.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional: 7d, 2w or a date), until (optional), tag (optional: key=value)
SELECT cause,
       count(*) AS recompiles,
       count(*) FILTER (WHERE is_limit_hit) AS limit_hits,
       count(DISTINCT run_id) AS runs,
       count(DISTINCT (co_name, function_file(co_file, co_filename), function_line(co_file_kind, co_firstlineno))) AS functions,
       min(reason) AS example
FROM recompiles
WHERE run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(ingest_date, $since)
GROUP BY cause
ORDER BY recompiles DESC, cause;

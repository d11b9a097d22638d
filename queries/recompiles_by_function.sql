-- title: Recompiles by function
-- question: Which functions recompile the most, for which causes and guards? Counts and seconds add up every rank of every selected run.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
SELECT co_name AS function,
       co_filename || ':' || co_firstlineno AS location,
       count(*) AS recompiles,
       count(*) FILTER (WHERE is_limit_hit) AS limit_hits,
       string_agg(DISTINCT cause, ', ' ORDER BY cause) AS causes,
       string_agg(DISTINCT guard_subject, ', ' ORDER BY guard_subject) AS guarded_on,
       count(DISTINCT run_id) AS runs
FROM recompiles
WHERE run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(ingest_date, $since)
GROUP BY ALL
ORDER BY recompiles DESC, function;

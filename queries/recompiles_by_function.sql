-- title: Recompiles by function
-- question: Which functions recompile the most, for which causes and guards? A function is its file's identity + its name (+ its first line in user code); a guard is its kind + source expression. Counts and seconds add up every rank of every selected run.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
SELECT co_name AS function,
       function_file(co_file, co_filename) || ':' || string_agg(DISTINCT co_firstlineno::VARCHAR, ',' ORDER BY co_firstlineno::VARCHAR) AS location,
       count(*) AS recompiles,
       count(*) FILTER (WHERE is_limit_hit) AS limit_hits,
       string_agg(DISTINCT cause, ', ' ORDER BY cause) AS causes,
       string_agg(DISTINCT guard_kind || ' ' || coalesce(guard_source, '?'), ', ' ORDER BY guard_kind || ' ' || coalesce(guard_source, '?')) AS guards,
       string_agg(DISTINCT guard_subject, ', ' ORDER BY guard_subject) AS guarded_on,
       count(DISTINCT run_id) AS runs
FROM recompiles
WHERE run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(ingest_date, $since)
GROUP BY co_name, function_file(co_file, co_filename), function_line(co_file_kind, co_firstlineno)
ORDER BY recompiles DESC, function, location;

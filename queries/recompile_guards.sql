-- title: Recompiles by guard
-- question: Which guards fail, fleet-wide? One row per guard (its kind + source expression, e.g. size of x.size()[1]), with its cause, the values it expected and saw, and the functions and runs affected.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), limit (optional, default 50)
-- Rows ingested before guard parts existed (guard_kind NULL) are grouped by cause and subject.
SELECT coalesce(guard_kind, cause) AS guard_kind,
       coalesce(guard_source, guard_subject) AS guard_source,
       string_agg(DISTINCT cause, ', ' ORDER BY cause) AS causes,
       count(*) AS recompiles,
       count(*) FILTER (WHERE is_limit_hit) AS limit_hits,
       array_to_string(list_slice(list(DISTINCT guard_expected ORDER BY guard_expected) FILTER (WHERE guard_expected IS NOT NULL), 1, 5), ' | ') AS expected,
       array_to_string(list_slice(list(DISTINCT guard_actual ORDER BY guard_actual) FILTER (WHERE guard_actual IS NOT NULL), 1, 5), ' | ') AS actual,
       count(DISTINCT (co_name, function_file(co_file, co_filename), function_line(co_file_kind, co_firstlineno))) AS functions,
       count(DISTINCT run_id) AS runs
FROM recompiles
WHERE run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(ingest_date, $since)
GROUP BY coalesce(guard_kind, cause), coalesce(guard_source, guard_subject)
ORDER BY recompiles DESC, guard_kind, guard_source
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 50);

-- title: Recompiles, one by one
-- question: Each recompile in order: which function, which guard failed, what cause, against which earlier compile?
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
SELECT r.name AS run, x.rank, x.compile_id, x.prev_compile_id AS after, x.co_name AS function,
       x.cause, x.guard_subject AS guarded_on, x.is_limit_hit AS limit_hit,
       x.reason, function_file(x.co_file, x.co_filename) || ':' || x.co_firstlineno AS location,
       x.guard_kind, x.guard_source, x.guard_expected AS expected, x.guard_actual AS actual
FROM recompiles x JOIN runs r USING (run_id)
WHERE x.run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(x.ingest_date, $since)
ORDER BY run, x.rank NULLS FIRST, x.ts, x.line_no;

-- title: Slowest compiles
-- question: Which compiles took longest, of which functions, and did they fail or recompile?
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), limit (optional, default 20)
SELECT r.name AS run, m.rank, m.compile_id, m.co_name AS function,
       function_file(m.co_file, m.co_filename) || ':' || m.co_firstlineno AS location,
       round(m.entire_frame_compile_time_s, 3) AS compile_s,
       round(m.backend_compile_time_s, 3) AS backend_s,
       m.graph_op_count AS ops, m.guard_count AS guards,
       m.fail_type, m.recompile_reason IS NOT NULL AS recompile
FROM compilation_metrics m JOIN runs r USING (run_id)
WHERE m.kind = 'compilation_metrics' AND m.entire_frame_compile_time_s IS NOT NULL
  AND m.run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(m.ingest_date, $since)
ORDER BY m.entire_frame_compile_time_s DESC, run, m.compile_id
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 20);

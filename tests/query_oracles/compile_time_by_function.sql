-- compile_time_by_function as it was before run_facts() (it read the tables, not each run's kept facts); the oracle of queries/compile_time_by_function.sql
-- (tests/test_run_facts.py).
SELECT co_name AS function,
       function_file(co_file, co_filename) || ':' || string_agg(DISTINCT co_firstlineno::VARCHAR, ',' ORDER BY co_firstlineno::VARCHAR) AS location,
       count(*) AS compiles, round(sum(entire_frame_compile_time_s), 3) AS compile_s,
       round(max(entire_frame_compile_time_s), 3) AS max_s, count(DISTINCT run_id) AS runs,
       function_file(co_file, co_filename) AS file, function_line(co_file_kind, co_firstlineno) AS line
FROM compilation_metrics
WHERE kind = 'compilation_metrics'
  AND run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(ingest_date, $since)
GROUP BY co_name, function_file(co_file, co_filename), function_line(co_file_kind, co_firstlineno)
ORDER BY compile_s DESC NULLS LAST, function, file, line
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 30);

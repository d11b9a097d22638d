-- title: Compile time by function
-- question: Which compiled functions (frames) cost the most compile time, over how many compiles? A function is its file's identity (package-relative for libraries, relative to the run's root for user code) + its name (+ its first line in user code), so it is one row on every install. Counts and seconds add up every rank of every selected run.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), limit (optional, default 30)
-- location shows the first line(s) the function had (a library's: not part of its identity, it moves
-- between releases; line is NULL for those).
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

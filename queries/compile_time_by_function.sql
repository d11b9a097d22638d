-- title: Compile time by function
-- question: Which compiled functions (frames) cost the most compile time, over how many compiles? Counts and seconds add up every rank of every selected run.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), limit (optional, default 30)
SELECT co_name AS function, co_filename || ':' || co_firstlineno AS location,
       count(*) AS compiles, round(sum(entire_frame_compile_time_s), 3) AS compile_s,
       round(max(entire_frame_compile_time_s), 3) AS max_s, count(DISTINCT run_id) AS runs
FROM compilation_metrics
WHERE kind = 'compilation_metrics'
  AND run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(ingest_date, $since)
GROUP BY ALL
ORDER BY compile_s DESC NULLS LAST, function
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 30);

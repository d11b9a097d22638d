-- title: Compile time by function
-- question: Which compiled functions (frames) cost the most compile time, over how many compiles? A function is its file's identity (package-relative for libraries, relative to the run's root for user code) + its name (+ its first line in user code), so it is one row on every install. Counts and seconds add up every rank of every selected run.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), limit (optional, default 30)
-- location shows the first line(s) the function had (a library's: not part of its identity, it moves
-- between releases; line is NULL for those).
-- each run's compiles by frame and first line: run_facts() (kept per commit)
SELECT co_name AS function,
       fn_file || ':' || string_agg(DISTINCT co_firstlineno::VARCHAR, ',' ORDER BY co_firstlineno::VARCHAR) AS location,
       sum(n)::BIGINT AS compiles, round(sum(compile_s), 3) AS compile_s,
       round(max(max_s), 3) AS max_s, count(DISTINCT run_id) AS runs,
       fn_file AS file, fn_line AS line
FROM run_facts($run_id, $since, $until, $tag)
WHERE what = 'frame' AND since_partition(ingest_date, $since)
GROUP BY co_name, fn_file, fn_line
ORDER BY compile_s DESC NULLS LAST, function, file, line
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 30);

-- title: Spyre failure reports
-- question: Where did torch-spyre fail (frontend compile, backend compile, kernel launch, unimplemented op), with which exception, on which kernel, and was the device there? One row per failure identity of the FFDC reports (TORCH_SPYRE_FFDC=1), per category.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
-- reason: the message's first line; failure_key groups reports whose messages differ only in numbers,
-- addresses, ids and paths. The whole report: spyre_failure_reports (traceback, environment, artifact_paths).
SELECT coalesce(category, '?') AS category,
       coalesce(min(exc_type), '?') AS exc_type,
       left(min(split_part(coalesce(exc_message, ''), chr(10), 1)), 300) AS reason,
       count(*) AS reports,
       count(DISTINCT run_id) AS runs,
       array_to_string(list_slice(list(DISTINCT kernel_name ORDER BY kernel_name) FILTER (WHERE kernel_name IS NOT NULL), 1, 5), ', ') AS kernels,
       min(raise_file || ':' || raise_line) AS raised_at,
       min(frame_file || ':' || frame_line) AS user_frame,
       bool_or(spyre_available) AS device_seen,
       max(ts) AS last_seen,
       failure_key
FROM spyre_failure_reports
WHERE run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(ingest_date, $since)
GROUP BY category, failure_key
ORDER BY reports DESC, last_seen DESC, category, reason

-- title: Top compile failures
-- question: Which compile failures (not restarts) happen most, with what error, in how many runs and functions? Counts and seconds add up every rank of every selected run.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), limit (optional, default 15)
-- Failures of failures_and_restarts (what = 'failure'), grouped by type and the reason's first line.
SELECT coalesce(fail_type, '?') AS fail_type,
       left(coalesce(split_part(fail_reason, chr(10), 1), ''), 300) AS reason,
       count(*) AS failures,
       count(DISTINCT run_id) AS runs,
       count(DISTINCT co_name) AS functions,
       array_to_string(list_slice(list(DISTINCT coalesce(co_name, '?') ORDER BY coalesce(co_name, '?')), 1, 5), ', ') AS some_functions,
       max(ts) AS last_seen
FROM failures
WHERE NOT is_restart
  AND run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag))
GROUP BY ALL
ORDER BY failures DESC, runs DESC, fail_type, reason
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 15);

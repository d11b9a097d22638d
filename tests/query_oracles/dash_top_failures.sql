-- dash_top_failures as it was before run_facts() (it read the tables, not each run's kept facts); the oracle of queries/dash_top_failures.sql
-- (tests/test_run_facts.py).
SELECT coalesce(min(exc_type), min(fail_type), '?') AS fail_type,
       left(min(message_line(coalesce(exc_message, fail_reason, ''))), 300) AS reason,
       count(*) AS failures,
       count(DISTINCT run_id) AS runs,
       count(DISTINCT (co_name, function_file(co_file, co_filename), function_line(co_file_kind, co_firstlineno))) AS functions,
       array_to_string(list_slice(list(DISTINCT coalesce(co_name, '?') ORDER BY coalesce(co_name, '?')), 1, 5), ', ') AS some_functions,
       min(frame_file || ':' || frame_line) AS location,
       max(ts) AS last_seen,
       failure_id(failure_key, fail_type, fail_reason) AS failure_key
FROM failures
WHERE NOT is_restart
  AND run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag))
GROUP BY failure_id(failure_key, fail_type, fail_reason)
ORDER BY failures DESC, runs DESC, fail_type, reason
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 15);

-- title: Top compile failures
-- question: Which compile failures (not restarts) happen most, with what exception and message, where in the user's code, in how many runs and functions? Counts and seconds add up every rank of every selected run.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), limit (optional, default 15)
-- Failures of failures_and_restarts (what = 'failure'), one row per failure identity (failure_key);
-- reason = the message on one line (message_line: up to a blank line or torch's Explanation; an example
-- of the group); the full text: failures.exc_message, or failures_and_restarts -p full 1.
-- each run's failed compiles counted by failure and frame: run_facts() (kept per commit)
SELECT coalesce(min(exc_type), min(fail_type), '?') AS fail_type,
       left(min(reason), 300) AS reason,
       sum(n)::BIGINT AS failures,
       count(DISTINCT run_id) AS runs,
       count(DISTINCT (co_name, fn_file, fn_line)) AS functions,
       array_to_string(list_slice(list(DISTINCT coalesce(co_name, '?') ORDER BY coalesce(co_name, '?')), 1, 5), ', ') AS some_functions,
       min(location) AS location,
       max(last_ts) AS last_seen,
       failure_key
FROM run_facts($run_id, $since, $until, $tag)
WHERE what = 'failure'
GROUP BY failure_key
ORDER BY failures DESC, runs DESC, fail_type, reason
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 15);

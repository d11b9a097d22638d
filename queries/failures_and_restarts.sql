-- title: Failures and restarts
-- question: Which compiles failed (exception type and message), where in the user's code, and how often did dynamo restart its analysis? One row per failure identity (type + message with numbers, addresses, ids and paths masked). Counts and seconds add up every rank of every selected run.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), full (optional: any value shows the whole message of one example instead of one line)
-- reason: a failure's message on one line, up to its first blank line or torch's Explanation (a restart:
-- the first line of its reason); -p full 1: the whole message as logged.
SELECT CASE WHEN is_restart THEN 'restart' ELSE 'failure' END AS what,
       coalesce(min(exc_type), min(fail_type), '') AS fail_type,
       CASE WHEN $full IS NOT NULL THEN min(coalesce(exc_message, fail_reason))
            WHEN bool_and(is_restart) THEN min(split_part(fail_reason, chr(10), 1))
            ELSE min(message_line(coalesce(exc_message, fail_reason))) END AS reason,
       count(*) AS count,
       count(DISTINCT run_id) AS runs,
       string_agg(DISTINCT co_name, ', ' ORDER BY co_name) AS functions,
       min(frame_file || ':' || frame_line) AS location,
       failure_id(failure_key, fail_type, fail_reason) AS failure_key
FROM failures
WHERE run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(ingest_date, $since)
GROUP BY is_restart, failure_id(failure_key, fail_type, fail_reason)
ORDER BY what, count DESC, reason;

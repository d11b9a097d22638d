-- title: Failures and restarts
-- question: Which compiles failed (and why), and how often did dynamo restart its analysis? Counts and seconds add up every rank of every selected run.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
SELECT CASE WHEN is_restart THEN 'restart' ELSE 'failure' END AS what,
       coalesce(fail_type, '') AS fail_type,
       split_part(fail_reason, chr(10), 1) AS reason,
       count(*) AS count,
       count(DISTINCT run_id) AS runs,
       string_agg(DISTINCT co_name, ', ' ORDER BY co_name) AS functions
FROM failures
WHERE run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(ingest_date, $since)
GROUP BY ALL
ORDER BY what, count DESC, reason;

-- title: Ingest errors
-- question: What could pt2logs not read (errors) or read with doubts (warnings), where?
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
SELECT severity, kind, count(*) AS count, count(DISTINCT path) AS files,
       min(path || ':' || coalesce(line_no::VARCHAR, '-')) AS example, min(message) AS message
FROM ingest_errors
WHERE run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(ingest_date, $since)
GROUP BY ALL
ORDER BY severity, count DESC, kind;

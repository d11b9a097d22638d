-- title: Runs
-- question: Which runs are in the warehouse, when did they run, how big were they?
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional: 7d, 2w or a date), until (optional), tag (optional: key=value)
SELECT run_id, name, started_at, n_ranks, n_files, torch_version, torch_version_from,
       round(bytes / 1e6, 1) AS mb, n_events, n_errors, n_warnings, tags
FROM runs
WHERE run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(ingest_date, $since)
ORDER BY started_at DESC NULLS LAST, name;

-- title: Runs covered
-- question: How many runs does a selection (a dashboard, a report) cover, over which dates, with how many ranks and torch versions?
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
SELECT count(*) AS runs,
       min(started_at) AS first_started,
       max(started_at) AS last_started,
       count(*) FILTER (WHERE n_ranks > 1) AS multi_rank_runs,
       coalesce(sum(n_errors), 0)::BIGINT AS ingest_errors,
       string_agg(DISTINCT torch_version, ', ' ORDER BY torch_version) AS torch_versions
FROM runs
WHERE run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag));

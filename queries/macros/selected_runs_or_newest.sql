-- title: The selected runs, or the newest run
-- what: The same selection as selected_runs(), but with no filter at all the newest run only (newest start, then name, then id), not the fleet: for queries about one run (trace events, a bug report's graphs) and every command about one run given none (pt2logs.reports.compose.resolve_run).
-- params: run (a run id, id prefix, name or name prefix; NULL: every run), since (runs started at or after; NULL: no bound), until (runs started before; NULL: no bound), tag (KEY=VALUE; NULL: any)
-- columns: run_id
CREATE OR REPLACE MACRO selected_runs_or_newest(run, since, until, tag) AS TABLE
SELECT run_id FROM selected_runs(run, since, until, tag)
WHERE run IS NOT NULL OR since IS NOT NULL OR until IS NOT NULL OR tag IS NOT NULL
UNION ALL
(SELECT run_id FROM runs WHERE run IS NULL AND since IS NULL AND until IS NULL AND tag IS NULL
 ORDER BY started_at DESC NULLS LAST, name, run_id LIMIT 1);

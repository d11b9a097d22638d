-- title: The selected runs
-- what: Every named query selects runs through it, so every query filters runs the same way: run matches an id, a name or a prefix of either; since/until bound the start; tag is KEY=VALUE.
-- params: run (a run id, id prefix, name or name prefix; NULL: every run), since (runs started at or after; NULL: no bound), until (runs started before; NULL: no bound), tag (KEY=VALUE; NULL: any)
-- columns: run_id
CREATE OR REPLACE MACRO selected_runs(run, since, until, tag) AS TABLE
SELECT run_id FROM runs
WHERE (run IS NULL OR run_id = run OR name = run OR starts_with(run_id, run) OR starts_with(name, run))
  AND (since IS NULL OR started_at >= since)
  AND (until IS NULL OR started_at < until)
  AND tag_match(tags, tag);

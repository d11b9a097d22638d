-- title: The key components that differ, one row each
-- what: The differences of cache_pair_diffs(), one row per component.
-- params: run (a run id, id prefix, name or name prefix; NULL: every run), since (runs started at or after; NULL: no bound), until (runs started before; NULL: no bound), tag (KEY=VALUE; NULL: any), base (as cache_pairs())
-- columns: run_id, file, line_no (the lookup), component, kind, hash, base_hash, value, base_value
CREATE OR REPLACE MACRO cache_component_diffs(run, since, until, tag, base) AS TABLE
SELECT run_id, file, line_no, d.component, d.kind, d.hash, d.base_hash, d.value, d.base_value
FROM (SELECT run_id, file, line_no, unnest(diffs) AS d FROM cache_pair_diffs(run, since, until, tag, base));

-- title: Cache key components that differ
-- question: For each cache lookup that missed while the same lookup of an earlier run (same tags) or of the base run had another key, which components of the key differ, with both values?
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), base (optional: the run to compare with; default: for each run, the newest run started before it with the same tags that made the same lookup), limit (optional, default 200)
-- One row per component whose hash differs (or that one side lacks: an extra input); `value` and
-- `base_value` are torch's text (at most 1,024 characters each). The pairing rules:
-- queries/macros/cache_pairs.sql and cache_pair_diffs.sql.
SELECT p.run, p.rank, p.compile_id, p.co_name AS function, p.cache, p.lookup, p.base_run,
       p.d.kind, p.d.component, p.d.base_value, p.d.value, p.file, p.line_no
FROM (SELECT *, unnest(diffs) AS d FROM cache_pair_diffs($run_id, $since, $until, $tag, $base)) p
ORDER BY p.started_at, p.run, p.rank, p.line_no, p.d.kind, p.d.component
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 200);

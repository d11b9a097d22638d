-- title: Cache lookups of one compile
-- question: Which caches did this compile look up, hit or miss, why, and what went into each key (its components and their kinds)?
-- params: run_id (optional: id, id prefix, name or name prefix; default: the newest run), compile_id (optional: F/C, or !A/F/C; default: every compile of the run), rank (optional: one rank)
-- `components`: the key's components as `kind component` text, in the order logged (cache_key_components).
WITH c AS (
  SELECT run_id, rank, compile_id, cache, key, list(kind || ' ' || component ORDER BY line_no, component) AS components
  FROM cache_key_components
  WHERE run_id IN (SELECT run_id FROM selected_runs_or_newest($run_id, NULL, NULL, NULL))
    AND ($compile_id IS NULL OR compile_id = $compile_id)
  GROUP BY ALL)
SELECT r.name AS run, e.rank, e.compile_id, e.cache, e.outcome, e.reason, e.key, e.time_saved_ms, e.is_backward,
       e.n_components, c.components, e.file, e.line_no, e.run_id
FROM cache_events e JOIN runs r USING (run_id)
LEFT JOIN c ON c.run_id = e.run_id AND c.rank IS NOT DISTINCT FROM e.rank AND c.compile_id IS NOT DISTINCT FROM e.compile_id
  AND c.cache = e.cache AND c.key IS NOT DISTINCT FROM e.key
WHERE e.run_id IN (SELECT run_id FROM selected_runs_or_newest($run_id, NULL, NULL, NULL))
  AND ($compile_id IS NULL OR e.compile_id = $compile_id) AND ($rank IS NULL OR e.rank = TRY_CAST($rank AS INTEGER))
ORDER BY e.rank NULLS FIRST, e.compile_id, e.file, e.line_no;

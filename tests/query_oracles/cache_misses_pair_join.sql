-- cache_misses as it was with cache_pair_diffs(), before its words moved into the pairs: the words made per pair
-- in a CTE and joined back onto the pairs by (run_id, file, line_no); the oracle of queries/cache_misses.sql
-- (tests/test_cache_misses.py, which also gives the pairs differences of every shape).
WITH paired AS MATERIALIZED (SELECT * FROM cache_pair_diffs($run_id, $since, $until, $tag, $base)),
diffs AS (  -- a pair's differing components in words (the pairs with some)
  SELECT run_id, file, line_no,
         nullif(array_to_string(list_sort(list_distinct(list_transform(diffs, lambda x: x.kind))), ', '), '') AS differs,
         array_to_string(list_sort(list_transform(diffs, lambda x: x.component), 'ASC', 'NULLS LAST')[1:6], ', ')
           || CASE WHEN len(diffs) > 6 THEN ' (+' || (len(diffs) - 6) || ')' ELSE '' END AS components
  FROM paired WHERE len(diffs) > 0),
per_compile AS (  -- what differs in a compile's keys that have components (for a cache that logged none)
  SELECT p.run_id, p.rank, p.compile_id, string_agg(DISTINCT d.differs, ', ') AS differs
  FROM paired p JOIN diffs d ON d.run_id = p.run_id AND d.file = p.file AND d.line_no = p.line_no
  GROUP BY ALL)
SELECT p.run, p.rank, p.compile_id, p.co_name AS function, p.cache, p.lookup, p.outcome, p.base_run, p.base_outcome,
       CASE WHEN p.outcome = 'bypass' THEN 'bypass: ' || coalesce(p.reason, 'no reason logged')
            WHEN p.base_run IS NULL THEN 'no earlier run made this lookup: a cold start'
            WHEN p.key IS NULL OR p.base_key IS NULL THEN 'a key is missing: cannot compare'
            WHEN p.key = p.base_key THEN 'same key as ' || p.base_run || ' (' || coalesce(p.base_outcome, '?')
                 || '): the entry was not in the cache (cache folder not kept, another machine, or evicted)'
            WHEN p.n_components = 0 OR p.base_components = 0 THEN 'key differs; torch logged no components for this cache'
                 || coalesce(' (this compile''s other keys differ in ' || pc.differs || ')', '')
            ELSE 'key differs in ' || coalesce(d.differs || ': ' || d.components, '?') END AS why,
       d.differs, d.components,
       p.key, p.base_key, p.file, p.line_no
FROM paired p LEFT JOIN diffs d ON d.run_id = p.run_id AND d.file = p.file AND d.line_no = p.line_no
LEFT JOIN per_compile pc ON pc.run_id = p.run_id AND pc.rank IS NOT DISTINCT FROM p.rank AND pc.compile_id IS NOT DISTINCT FROM p.compile_id
ORDER BY p.started_at, p.run, p.rank, p.line_no;

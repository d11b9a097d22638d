-- cache_key_diff as it was before cache_pair_diffs() (its pairs made twice); the oracle of queries/cache_key_diff.sql
-- (tests/test_query_rewrites.py).
SELECT p.run, p.rank, p.compile_id, p.co_name AS function, p.cache, p.lookup, p.base_run,
       d.kind, d.component, d.base_value, d.value, p.file, p.line_no
FROM cache_component_diffs_oracle($run_id, $since, $until, $tag, $base) d
JOIN cache_pairs($run_id, $since, $until, $tag, $base) p ON p.run_id = d.run_id AND p.file = d.file AND p.line_no = d.line_no
ORDER BY p.started_at, p.run, p.rank, p.line_no, d.kind, d.component
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 200);

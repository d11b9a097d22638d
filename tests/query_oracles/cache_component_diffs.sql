-- cache_component_diffs() as src/pt2logs/query/cache_rules.py (now queries/macros/) had it before cache_pair_diffs(): it pairs the lookups
-- itself, so a query that also needed the pairs paired them twice. The oracle of cache_pair_diffs()
-- (tests/test_query_rewrites.py), created as cache_component_diffs_oracle().
CREATE OR REPLACE MACRO cache_component_diffs_oracle(run, since, until, tag, base) AS TABLE
  WITH paired AS (SELECT * FROM cache_pairs(run, since, until, tag, base) WHERE base_id IS NOT NULL AND key IS DISTINCT FROM base_key),
  mine AS (
    SELECT p.run_id, p.file, p.line_no, k.component, k.kind, k.hash, k.value
    FROM paired p JOIN cache_key_components k ON k.run_id = p.run_id AND k.file = p.file AND k.line_no = p.line_no),
  theirs AS (
    SELECT p.run_id, p.file, p.line_no, k.component, k.kind, k.hash, k.value
    FROM paired p JOIN cache_key_components k ON k.run_id = p.base_id AND k.file = p.base_file AND k.line_no = p.base_line)
  SELECT coalesce(m.run_id, t.run_id) AS run_id, coalesce(m.file, t.file) AS file, coalesce(m.line_no, t.line_no) AS line_no,
         coalesce(m.component, t.component) AS component, coalesce(m.kind, t.kind) AS kind,
         m.hash, t.hash AS base_hash, m.value, t.value AS base_value
  FROM mine m FULL JOIN theirs t
    ON t.run_id = m.run_id AND t.file = m.file AND t.line_no = m.line_no AND t.component = m.component
  WHERE m.hash IS DISTINCT FROM t.hash

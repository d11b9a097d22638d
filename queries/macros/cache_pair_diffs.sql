-- title: Each missed lookup, with the key components that differ
-- what: cache_pairs(), each with the key components whose hash differs from the base lookup's (or that only one side has), with both values. One macro, so a query that needs the pairs and their differences pairs them once.
-- params: run (a run id, id prefix, name or name prefix; NULL: every run), since (runs started at or after; NULL: no bound), until (runs started before; NULL: no bound), tag (KEY=VALUE; NULL: any), base (as cache_pairs())
-- columns: cache_pairs().* (every column of cache_pairs()), diffs (a list of {component, kind, hash, base_hash, value, base_value}; NULL when none differs)
CREATE OR REPLACE MACRO cache_pair_diffs(run, since, until, tag, base) AS TABLE
WITH pairs AS MATERIALIZED (SELECT * FROM cache_pairs(run, since, until, tag, base)),
paired AS (SELECT * FROM pairs WHERE base_id IS NOT NULL AND key IS DISTINCT FROM base_key),
mine AS (
  SELECT p.run_id, p.file, p.line_no, k.component, k.kind, k.hash, k.value
  FROM paired p JOIN cache_key_components k ON k.run_id = p.run_id AND k.file = p.file AND k.line_no = p.line_no),
theirs AS (
  SELECT p.run_id, p.file, p.line_no, k.component, k.kind, k.hash, k.value
  FROM paired p JOIN cache_key_components k ON k.run_id = p.base_id AND k.file = p.base_file AND k.line_no = p.base_line),
diffs AS (
  SELECT coalesce(m.run_id, t.run_id) AS run_id, coalesce(m.file, t.file) AS file, coalesce(m.line_no, t.line_no) AS line_no,
         coalesce(m.component, t.component) AS component, coalesce(m.kind, t.kind) AS kind,
         m.hash, t.hash AS base_hash, m.value, t.value AS base_value
  FROM mine m FULL JOIN theirs t
    ON t.run_id = m.run_id AND t.file = m.file AND t.line_no = m.line_no AND t.component = m.component
  WHERE m.hash IS DISTINCT FROM t.hash)
SELECT p.*, d.diffs
FROM pairs p LEFT JOIN (
  SELECT run_id, file, line_no, list({'component': component, 'kind': kind, 'hash': hash, 'base_hash': base_hash,
                                      'value': value, 'base_value': base_value}) AS diffs
  FROM diffs GROUP BY ALL) d ON d.run_id = p.run_id AND d.file = p.file AND d.line_no = p.line_no;

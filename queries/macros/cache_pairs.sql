-- title: Each lookup that did not hit, with its base lookup
-- what: A lookup that did not hit, compared with the same lookup (same rank, cache, lookup number and function, else compile id) in its base run: the run given as base, else the newest run that started before it with the same tags and made that lookup (an as-of join: one probe per lookup). Why at query time: the base is another run, ingested before or after this one (docs/caches.md).
-- params: run (a run id, id prefix, name or name prefix; NULL: every run), since (runs started at or after; NULL: no bound), until (runs started before; NULL: no bound), tag (KEY=VALUE; NULL: any), base (the run to compare with; NULL: the newest earlier run with the same tags)
-- columns: cache_lookups().* (every column of cache_lookups()), same (the lookup's identity as one text), base_run, base_id, base_file, base_line, base_outcome, base_key, base_components (the base lookup; NULL when there is none: a cold start)
CREATE OR REPLACE MACRO cache_pairs(run, since, until, tag, base) AS TABLE
WITH look AS (
  -- one text for "the same lookup": rank, cache, lookup number and the function (or the compile id)
  SELECT *, concat_ws(chr(31), coalesce(CAST(rank AS VARCHAR), '-'), cache, CAST(lookup AS VARCHAR),
           CASE WHEN co_name IS NULL THEN 'c' || coalesce(compile_id, '-')
                ELSE concat_ws(chr(31), 'f', co_name, coalesce(fn_file, '-'), coalesce(CAST(fn_line AS VARCHAR), '-'),
                               coalesce(nth_compile, '-')) END) AS same
  FROM cache_lookups()),
base_run AS (SELECT run_id FROM selected_runs(base, NULL, NULL, NULL) WHERE base IS NOT NULL),
missed AS (
  SELECT * FROM look
  WHERE run_id IN (SELECT run_id FROM selected_runs(run, since, until, tag)) AND outcome IS DISTINCT FROM 'hit'),
-- with a base run: its same lookup (the first, by line)
given AS (
  SELECT m.*, b.run AS base_run, b.run_id AS base_id, b.file AS base_file, b.line_no AS base_line,
         b.outcome AS base_outcome, b.key AS base_key, b.n_components AS base_components
  FROM missed m LEFT JOIN (SELECT * FROM look WHERE run_id IN (SELECT run_id FROM base_run)) b
    ON b.run_id <> m.run_id AND b.same = m.same
  WHERE base IS NOT NULL
  QUALIFY row_number() OVER (PARTITION BY m.run_id, m.file, m.line_no ORDER BY b.line_no) = 1),
-- without: the same lookup of the newest run started before it with the same tags (an as-of join:
-- one probe per lookup, not every earlier run's)
newest AS (
  SELECT m.*, b.run AS base_run, b.run_id AS base_id, b.file AS base_file, b.line_no AS base_line,
         b.outcome AS base_outcome, b.key AS base_key, b.n_components AS base_components
  FROM (SELECT * FROM missed WHERE base IS NULL) m
  ASOF LEFT JOIN (SELECT * FROM look WHERE base IS NULL
                  QUALIFY row_number() OVER (PARTITION BY run_id, same ORDER BY line_no) = 1) b
    ON b.same = m.same AND b.tags = m.tags AND b.started_at < m.started_at)
SELECT * FROM given UNION ALL SELECT * FROM newest;

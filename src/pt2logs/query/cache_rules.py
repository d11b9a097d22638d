"""Why a cache missed, decided at query time: DuckDB table macros the cache queries share.

A lookup's identity across runs is the function compiled (``co_name`` + its file's identity + a user
function's first line, from ``compilation_metrics``: the same on every install) and which of its
compiles it is (C of compile id F/C: F numbers frames in the order a process met them, which another
run can change), the rank, the cache and the lookup's number in that compile (a compile looks the FX
graph cache up once per graph, forward then backward). The number is counted here, in line order, not
at ingest: a trace parsed in pieces counts the same. Without a known function (no metrics), the
compile id itself. A lookup that did not hit is compared with the same lookup in its *base* run: the
run given as ``base``, else the newest run that started before it with the same tags and made that
lookup.

* ``cache_lookups()`` — every lookup with its run's name, start and tags and its frame.
* ``cache_pairs(run, since, until, tag, base)`` — the selected runs' lookups that did not hit, each
  with its base lookup (``base_*`` columns NULL when there is none: a cold start).
* ``cache_pair_diffs(run, since, until, tag, base)`` — those pairs, each with ``diffs``: the key
  components whose hash differs (or that only one side has), with both values (a list; NULL when
  none differs). One macro, so a query that needs the pairs and their differences pairs them once.
* ``cache_component_diffs(run, since, until, tag, base)`` — the same differences, one row per component.

Why at query time: the base is another run, ingested before or after this one.
"""

from __future__ import annotations

CACHE_LOOKUPS = r"""CREATE OR REPLACE MACRO cache_lookups() AS TABLE
  WITH frames AS (
    SELECT run_id, rank, compile_id, any_value(co_name) AS co_name,
           any_value(function_file(co_file, co_filename)) AS fn_file,
           any_value(function_line(co_file_kind, co_firstlineno)) AS fn_line
    FROM compilation_metrics WHERE kind = 'compilation_metrics' GROUP BY ALL)
  SELECT c.run_id, r.name AS run, r.started_at, coalesce(CAST(r.tags AS VARCHAR), '{}') AS tags, c.rank, c.file,
         c.line_no, c.ts, c.compile_id, regexp_extract(c.compile_id, '/(\d+)$', 1) AS nth_compile,
         c.cache, row_number() OVER (PARTITION BY c.run_id, c.rank, c.file, c.compile_id, c.cache ORDER BY c.line_no) AS lookup,
         c.outcome, c.key, c.reason, c.n_components, f.co_name, f.fn_file, f.fn_line
  FROM cache_events c JOIN runs r USING (run_id)
  LEFT JOIN frames f ON f.run_id = c.run_id AND f.rank IS NOT DISTINCT FROM c.rank AND f.compile_id = c.compile_id"""

CACHE_PAIRS = """CREATE OR REPLACE MACRO cache_pairs(run, since, until, tag, base) AS TABLE
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
  SELECT * FROM given UNION ALL SELECT * FROM newest"""

CACHE_PAIR_DIFFS = """CREATE OR REPLACE MACRO cache_pair_diffs(run, since, until, tag, base) AS TABLE
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
    FROM diffs GROUP BY ALL) d ON d.run_id = p.run_id AND d.file = p.file AND d.line_no = p.line_no"""

CACHE_COMPONENT_DIFFS = """CREATE OR REPLACE MACRO cache_component_diffs(run, since, until, tag, base) AS TABLE
  SELECT run_id, file, line_no, d.component, d.kind, d.hash, d.base_hash, d.value, d.base_value
  FROM (SELECT run_id, file, line_no, unnest(diffs) AS d FROM cache_pair_diffs(run, since, until, tag, base))"""

CACHE_MACROS = [CACHE_LOOKUPS, CACHE_PAIRS, CACHE_PAIR_DIFFS, CACHE_COMPONENT_DIFFS]

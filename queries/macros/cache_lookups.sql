-- title: Every cache lookup, with its function
-- what: A lookup's identity across runs is the function compiled (co_name + its file's identity + a user function's first line, from compilation_metrics) and which of its compiles it is (nth_compile: C of compile id F/C; F numbers frames in the order a process met them, which another run can change), the rank, the cache and the lookup's number in that compile, counted here in line order (a trace parsed in pieces counts the same). docs/caches.md.
-- params: none
-- columns: run_id, run, started_at, tags (the run's, '{}' for none), rank, file, line_no, ts, compile_id, nth_compile, cache, lookup (its number among the compile's lookups of that cache), outcome, key, reason, n_components, co_name, fn_file, fn_line (the function compiled; NULL without metrics)
CREATE OR REPLACE MACRO cache_lookups() AS TABLE
WITH frames AS (
  SELECT run_id, rank, compile_id, any_value(co_name) AS co_name,
         any_value(function_file(co_file, co_filename)) AS fn_file,
         any_value(function_line(co_file_kind, co_firstlineno)) AS fn_line
  FROM compilation_metrics WHERE kind = 'compilation_metrics' GROUP BY ALL)
SELECT c.run_id, r.name AS run, r.started_at, coalesce(CAST(r.tags AS VARCHAR), '{}') AS tags, c.rank, c.file,
       c.line_no, c.ts, c.compile_id, CAST(c.frame_compile_id AS VARCHAR) AS nth_compile,
       c.cache, row_number() OVER (PARTITION BY c.run_id, c.rank, c.file, c.compile_id, c.cache ORDER BY c.line_no) AS lookup,
       c.outcome, c.key, c.reason, c.n_components, f.co_name, f.fn_file, f.fn_line
FROM cache_events c JOIN runs r USING (run_id)
LEFT JOIN frames f ON f.run_id = c.run_id AND f.rank IS NOT DISTINCT FROM c.rank AND f.compile_id = c.compile_id;

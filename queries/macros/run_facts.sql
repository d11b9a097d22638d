-- title: Per-run facts of the weekly cards
-- what: What the fleet's weekly cards total per run, kept per committed transaction (pt2logs.query.kept_rows, kind FACTS): a row with what = 'run' per run (its compile time and compiles, failed compiles, recompiles, graph breaks, and the compile time split into the non-overlapping stages of frame_compile_stages(); NULL where the run has no such row), a row with what = 'site' per graph-break site of the run (graph_break_sites()), and the run's recompiles, failed compiles, kernels, cache lookups and compiles counted by what the weekly cards group them by ('recompile', 'failure', 'kernel', 'cache', 'frame'). dash_week_over_week, dash_compile_time_trend, dash_recompiles_trend, dash_top_failures, dash_kernel_counts, graph_break_hotspots, cache_hit_rate and compile_time_by_function total these, not the tables. A run whose live transaction's facts were kept after its commit (_run_facts_kept) is read from them, the others computed here; the answer is the same.
-- params: p_run (a run id, id prefix, name or name prefix; NULL: every run), p_since (runs started at or after; NULL: no bound), p_until (runs started before; NULL: no bound), p_tag (KEY=VALUE; NULL: any)
-- columns: what ('run', 'site', 'recompile', 'failure', 'kernel', 'cache' or 'frame'), run_id, compile_s (sum of entire_frame_compile_time_s), compiles (compilation_metrics records), failures (those with fail_type), recompiles, graph_breaks (occurrences), total, dynamo, aot, inductor, codegen (seconds: frame_compile_stages() summed, total - backend, backend - inductor, inductor - codegen, codegen), site_break, site_file, site_line, library_frame (a 'site' row: the run's breaks at a site of graph_break_sites(); its gb_id, gb_type, occurrences, site_compiles, co_name and explanation below), cause, co_name, fn_file, fn_line (a 'recompile' row: the run's recompiles of a cause and frame; a 'failure' row: its failed compiles of a failure and frame), n (how many), limit_hits, failure_key (failure_id()), exc_type, fail_type, reason (the first of their messages' first lines), location (the first frame), last_ts, backend, kernel_kind (a 'kernel' row: the run's kernels of a backend and kind), fresh, from_cache, kernel_compiles (compiles that made them), ingest_date (of 'site', 'cache' and 'frame' rows), gb_id, gb_type, occurrences, site_compiles, explanation (a 'site' row: the least gb_id, gb_type and explanation of its breaks, their sum, its compiles), cache, hits, misses, bypasses, saved_ms (a 'cache' row: the run's lookups of a cache, n of them; the time its hits saved), co_firstlineno, max_s (a 'frame' row: the run's compiles of a frame and first line, n of them, compile_s their time, max_s the slowest)
CREATE OR REPLACE MACRO run_facts(p_run, p_since, p_until, p_tag) AS TABLE
WITH sel0 AS (SELECT run_id FROM selected_runs(p_run, p_since, p_until, p_tag)),
-- the facts kept for a run's live transaction (pt2logs.query.kept_rows) are read; the other runs' are computed here
kept AS (SELECT * EXCLUDE (txn) FROM _run_facts_kept WHERE run_id IN (SELECT run_id FROM sel0)),
sel AS (SELECT run_id FROM sel0 WHERE run_id NOT IN (SELECT run_id FROM kept)),
m AS (SELECT run_id, sum(entire_frame_compile_time_s) AS compile_s, count(*) AS compiles,
             count(*) FILTER (WHERE fail_type IS NOT NULL) AS failures
      FROM compilation_metrics WHERE kind = 'compilation_metrics' AND run_id IN (SELECT run_id FROM sel) GROUP BY run_id),
st AS (SELECT run_id, sum(total) AS total, sum(total - backend) AS dynamo, sum(backend - inductor) AS aot,
              sum(inductor - codegen) AS inductor, sum(codegen) AS codegen
       FROM frame_compile_stages() WHERE run_id IN (SELECT run_id FROM sel) GROUP BY run_id),
rc AS (SELECT run_id, count(*) AS recompiles FROM recompiles WHERE run_id IN (SELECT run_id FROM sel) GROUP BY run_id),
gb AS (SELECT run_id, sum(occurrences)::BIGINT AS graph_breaks FROM graph_breaks WHERE run_id IN (SELECT run_id FROM sel) GROUP BY run_id)
SELECT * FROM kept
UNION ALL BY NAME
SELECT 'run' AS what, s.run_id, m.compile_s, m.compiles, m.failures, rc.recompiles, gb.graph_breaks,
       st.total, st.dynamo, st.aot, st.inductor, st.codegen,
       NULL::VARCHAR AS site_break, NULL::VARCHAR AS site_file, NULL::INTEGER AS site_line, NULL::VARCHAR AS library_frame
FROM sel s LEFT JOIN m USING (run_id) LEFT JOIN st USING (run_id) LEFT JOIN rc USING (run_id) LEFT JOIN gb USING (run_id)
UNION ALL BY NAME
-- graph_break_hotspots (and the new sites of dash_week_over_week): the run's breaks by site (a run's rows are all of
-- one transaction, so of one ingest_date: the cards' since_partition() keeps or drops a run's rows together)
SELECT 'site' AS what, run_id, site_break, site_file, site_line, library_frame, ingest_date,
       min(gb_id) AS gb_id, min(gb_type) AS gb_type, sum(occurrences)::BIGINT AS occurrences,
       count(DISTINCT (run_id, compile_id)) AS site_compiles, min(co_name) AS co_name, min(explanation) AS explanation
FROM graph_break_sites() WHERE run_id IN (SELECT run_id FROM sel)
GROUP BY run_id, site_break, site_file, site_line, library_frame, ingest_date
UNION ALL BY NAME
-- cache_hit_rate: the run's cache lookups by cache
SELECT 'cache' AS what, run_id, cache, ingest_date, count(*) AS n, count(*) FILTER (WHERE outcome = 'hit') AS hits,
       count(*) FILTER (WHERE outcome = 'miss') AS misses, count(*) FILTER (WHERE outcome = 'bypass') AS bypasses,
       sum(time_saved_ms) FILTER (WHERE outcome = 'hit') AS saved_ms
FROM cache_events WHERE run_id IN (SELECT run_id FROM sel)
GROUP BY run_id, cache, ingest_date
UNION ALL BY NAME
-- compile_time_by_function: the run's compiles by frame and first line
SELECT 'frame' AS what, run_id, co_name, function_file(co_file, co_filename) AS fn_file,
       function_line(co_file_kind, co_firstlineno) AS fn_line, co_firstlineno, ingest_date, count(*) AS n,
       sum(entire_frame_compile_time_s) AS compile_s, max(entire_frame_compile_time_s) AS max_s
FROM compilation_metrics WHERE kind = 'compilation_metrics' AND run_id IN (SELECT run_id FROM sel)
GROUP BY run_id, co_name, function_file(co_file, co_filename), function_line(co_file_kind, co_firstlineno), co_firstlineno,
         ingest_date
UNION ALL BY NAME
-- dash_recompiles_trend: the run's recompiles by cause and frame
SELECT 'recompile' AS what, run_id, cause, co_name, function_file(co_file, co_filename) AS fn_file,
       function_line(co_file_kind, co_firstlineno) AS fn_line, count(*) AS n, count(*) FILTER (WHERE is_limit_hit) AS limit_hits
FROM recompiles WHERE run_id IN (SELECT run_id FROM sel)
GROUP BY run_id, cause, co_name, function_file(co_file, co_filename), function_line(co_file_kind, co_firstlineno)
UNION ALL BY NAME
-- dash_top_failures: the run's failed compiles (not restarts) by failure and frame
SELECT 'failure' AS what, run_id, failure_id(failure_key, fail_type, fail_reason) AS failure_key, co_name,
       function_file(co_file, co_filename) AS fn_file, function_line(co_file_kind, co_firstlineno) AS fn_line, count(*) AS n,
       min(exc_type) AS exc_type, min(fail_type) AS fail_type, min(message_line(coalesce(exc_message, fail_reason, ''))) AS reason,
       min(frame_file || ':' || frame_line) AS location, max(ts) AS last_ts
FROM failures WHERE NOT is_restart AND run_id IN (SELECT run_id FROM sel)
GROUP BY run_id, failure_id(failure_key, fail_type, fail_reason), co_name, function_file(co_file, co_filename),
         function_line(co_file_kind, co_firstlineno)
UNION ALL BY NAME
-- dash_kernel_counts: the run's kernels by backend and kind
SELECT 'kernel' AS what, run_id, coalesce(backend, '?') AS backend, coalesce(kind, '?') AS kernel_kind, count(*) AS n,
       count(*) FILTER (WHERE cache_hit IS NOT TRUE) AS fresh, count(*) FILTER (WHERE cache_hit) AS from_cache,
       count(DISTINCT (rank, compile_id)) AS kernel_compiles
FROM kernels WHERE run_id IN (SELECT run_id FROM sel)
GROUP BY ALL;

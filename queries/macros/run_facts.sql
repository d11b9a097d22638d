-- title: Per-run facts of the weekly cards
-- what: What the fleet's weekly cards total per run, kept per committed transaction (pt2logs.query.kept_rows, kind FACTS): a row with what = 'run' per run (its compile time and compiles, failed compiles, recompiles, graph breaks, and the compile time split into the non-overlapping stages of frame_compile_stages(); NULL where the run has no such row), a row with what = 'site' per distinct graph-break site of the run (graph_break_sites()), and the run's recompiles, failed compiles and kernels counted by what the weekly cards group them by ('recompile', 'failure', 'kernel'). dash_week_over_week, dash_compile_time_trend, dash_recompiles_trend, dash_top_failures and dash_kernel_counts total these, not the tables. A run whose live transaction's facts were kept after its commit (_run_facts_kept) is read from them, the others computed here; the answer is the same.
-- params: p_run (a run id, id prefix, name or name prefix; NULL: every run), p_since (runs started at or after; NULL: no bound), p_until (runs started before; NULL: no bound), p_tag (KEY=VALUE; NULL: any)
-- columns: what ('run', 'site', 'recompile', 'failure' or 'kernel'), run_id, compile_s (sum of entire_frame_compile_time_s), compiles (compilation_metrics records), failures (those with fail_type), recompiles, graph_breaks (occurrences), total, dynamo, aot, inductor, codegen (seconds: frame_compile_stages() summed, total - backend, backend - inductor, inductor - codegen, codegen), site_break, site_file, site_line, library_frame (a 'site' row: graph_break_sites()), cause, co_name, fn_file, fn_line (a 'recompile' row: the run's recompiles of a cause and frame; a 'failure' row: its failed compiles of a failure and frame), n (how many), limit_hits, failure_key (failure_id()), exc_type, fail_type, reason (the first of their messages' first lines), location (the first frame), last_ts, backend, kernel_kind (a 'kernel' row: the run's kernels of a backend and kind), fresh, from_cache, kernel_compiles (compiles that made them)
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
SELECT DISTINCT 'site' AS what, run_id, site_break, site_file, site_line, library_frame
FROM graph_break_sites() WHERE run_id IN (SELECT run_id FROM sel)
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

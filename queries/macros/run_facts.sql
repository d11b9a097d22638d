-- title: Per-run facts of the weekly cards
-- what: What the fleet's weekly cards total per run, kept per committed transaction (pt2logs.query.kept_rows, kind FACTS): a row with what = 'run' per run (its compile time and compiles, failed compiles, recompiles, graph breaks, and the compile time split into the non-overlapping stages of frame_compile_stages(); NULL where the run has no such row), and a row with what = 'site' per distinct graph-break site of the run (graph_break_sites()). dash_week_over_week and dash_compile_time_trend sum these, not the tables. A run whose live transaction's facts were kept after its commit (_run_facts_kept) is read from them, the others computed here; the answer is the same.
-- params: p_run (a run id, id prefix, name or name prefix; NULL: every run), p_since (runs started at or after; NULL: no bound), p_until (runs started before; NULL: no bound), p_tag (KEY=VALUE; NULL: any)
-- columns: what ('run' or 'site'), run_id, compile_s (sum of entire_frame_compile_time_s), compiles (compilation_metrics records), failures (those with fail_type), recompiles, graph_breaks (occurrences), total, dynamo, aot, inductor, codegen (seconds: frame_compile_stages() summed, total - backend, backend - inductor, inductor - codegen, codegen), site_break, site_file, site_line, library_frame (a 'site' row: graph_break_sites())
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
FROM graph_break_sites() WHERE run_id IN (SELECT run_id FROM sel);

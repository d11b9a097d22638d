-- title: Compile waterfall
-- question: When did each compile of a run happen, how long did it take, and which phase of it took the time?
-- params: run_id (optional: id, id prefix, name or name prefix; meant for one run), since (optional), until (optional), tag (optional: key=value), limit (optional: compiles shown, the slowest, default 40)
-- One row per compile and phase (the stages of compile_time_by_phase), laid end to end from the
-- compile's start (seconds since its run started): durations are exact, the order inside one
-- compile is the pipeline order (dynamo, aot autograd, inductor, code gen).
WITH c AS (
  SELECT m.run_id, r.name AS run, m.rank, m.compile_id, m.co_name,
         coalesce(m.start_time, epoch(m.ts)) - epoch(r.started_at) AS start_s,
         coalesce(m.entire_frame_compile_time_s, 0) AS total,
         least(coalesce(m.backend_compile_time_s, 0), coalesce(m.entire_frame_compile_time_s, 0)) AS backend,
         least(coalesce(m.inductor_compile_time_s, 0), coalesce(m.backend_compile_time_s, 0)) AS inductor,
         least(coalesce(m.code_gen_time_s, 0), coalesce(m.inductor_compile_time_s, 0)) AS codegen,
         m.fail_type, m.recompile_reason IS NOT NULL AS recompile, m.line_no
  FROM compilation_metrics m JOIN runs r USING (run_id)
  WHERE m.kind = 'compilation_metrics'
    AND m.run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag))),
top AS (
  SELECT * FROM c
  QUALIFY row_number() OVER (ORDER BY total DESC, run, compile_id, rank) <= coalesce(TRY_CAST($limit AS INTEGER), 40)),
named AS (
  SELECT *, concat_ws(' ', CASE WHEN (SELECT count(DISTINCT run_id) FROM top) > 1 THEN run END,
                      CASE WHEN rank IS NOT NULL THEN 'rank ' || rank END,
                      '[' || compile_id || ']', coalesce(co_name, '?')) AS label,
         row_number() OVER (ORDER BY start_s NULLS LAST, run, rank, line_no) AS seq
  FROM top),
-- a compile id can repeat in one run (torch._dynamo.reset()): number the repeats
lab AS (
  SELECT *, label || CASE WHEN count(*) OVER (PARTITION BY label) > 1
                          THEN ' (' || row_number() OVER (PARTITION BY label ORDER BY seq) || ')' ELSE '' END AS compile
  FROM named),
ph AS (
  SELECT *, 'dynamo (tracing, guards)' AS phase, 1 AS ord, 0.0 AS off, total - backend AS s FROM lab
  UNION ALL SELECT *, 'aot autograd', 2, total - backend, backend - inductor FROM lab
  UNION ALL SELECT *, 'inductor (lowering, scheduling)', 3, total - inductor, inductor - codegen FROM lab
  UNION ALL SELECT *, 'inductor code gen', 4, total - codegen, codegen FROM lab)
SELECT run, rank, compile_id, compile, seq, co_name AS function, phase, ord,
       round(start_s + off, 3) AS start_s, round(start_s + off + s, 3) AS end_s, round(s, 3) AS seconds,
       round(total, 3) AS compile_s, fail_type, recompile
FROM ph
WHERE s > 0 OR ord = 1
ORDER BY seq, ord;

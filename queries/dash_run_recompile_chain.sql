-- title: Recompile chains
-- question: Which frames recompiled, in what order, and which guard failed each time (with its cause)?
-- params: run_id (optional: id, id prefix, name or name prefix; meant for one run), since (optional), until (optional), tag (optional: key=value), limit (optional: recompiles shown, default 300)
-- A frame is a frame id (the F of its compile id F/C: the frame_id column) in one run and rank; step =
-- the recompile's position in its frame's chain (1 = first recompile). Frames with the most
-- recompiles come first.
WITH x AS (
  SELECT r.name AS run, x.rank, coalesce(CAST(x.frame_id AS VARCHAR), x.co_name) AS frame_id, x.compile_id, x.prev_compile_id, x.co_name, function_file(x.co_file, x.co_filename) AS co_filename, x.co_firstlineno,
         x.cause, x.guard_subject, x.guard_kind, x.guard_source, x.guard_expected, x.guard_actual, x.is_limit_hit, left(x.reason, 300) AS reason, x.ts, x.line_no
  FROM recompiles x JOIN runs r USING (run_id)
  WHERE x.run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag))),
named AS (
  SELECT *, max(co_name) OVER w AS fn, max(co_filename) OVER w AS fn_file, max(co_firstlineno) OVER w AS fn_line,
         row_number() OVER (w ORDER BY ts, line_no) AS step, count(*) OVER w AS frame_recompiles
  FROM x WINDOW w AS (PARTITION BY run, rank, frame_id)),
f AS (
  SELECT *,
         concat_ws(' ', CASE WHEN (SELECT count(DISTINCT run) FROM x) > 1 THEN run END,
                   CASE WHEN rank IS NOT NULL THEN 'rank ' || rank END,
                   coalesce(fn, '(frame unknown)'),
                   CASE WHEN fn_file IS NOT NULL THEN '(' || regexp_extract(fn_file, '[^/\\]*$') || ':' || fn_line || ')' END,
                   CASE WHEN frame_id IS NOT NULL THEN '#' || frame_id END) AS frame
  FROM named)
SELECT run, rank, frame, fn_file || ':' || fn_line AS location, step, frame_recompiles,
       compile_id, prev_compile_id AS after, cause, guard_subject AS guarded_on, is_limit_hit AS limit_hit, reason,
       guard_kind, guard_source, guard_expected AS expected, guard_actual AS actual
FROM f
ORDER BY frame_recompiles DESC, frame, step
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 300);

-- title: Phases of one compile
-- question: Which traced phases (dynamo_timed spans) did this compile go through, nested how, for how long?
-- params: run_id (optional: id, id prefix, name or name prefix; default: the newest run), compile_id (optional: F/C, or !A/F/C; default: every compile of the run), rank (optional: one rank)
-- Instant events left out; `seconds` NULL for a span that never ended (a compile left open).
SELECT r.name AS run, p.rank, p.compile_id, p.phase, p.parent_phase, p.depth, p.stage,
       round(p.duration_us / 1e6, 6) AS seconds, p.ts, p.file, p.line_no, p.run_id
FROM compile_phases p JOIN runs r USING (run_id)
WHERE p.run_id IN (SELECT run_id FROM selected_runs_or_newest($run_id, NULL, NULL, NULL))
  AND NOT coalesce(p.is_instant, false)
  AND ($compile_id IS NULL OR p.compile_id = $compile_id) AND ($rank IS NULL OR p.rank = TRY_CAST($rank AS INTEGER))
ORDER BY p.rank NULLS FIRST, p.compile_id, p.start_us, p.depth;

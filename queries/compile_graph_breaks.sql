-- title: Graph breaks of one compile
-- question: Where did this compile break its graph, with both frames: the user line that led there and the library function it broke in, the reason as logged and the break's site?
-- params: run_id (optional: id, id prefix, name or name prefix; default: the newest run), compile_id (optional: F/C, or !A/F/C; default: every compile of the run), rank (optional: one rank)
-- One row per graph_breaks row, in log order. `break_key` names the site (`pt2logs serve`'s /sites/KEY,
-- the `graph_break_hotspots` key); `user_stack` is the stack as logged, outermost first.
SELECT r.name AS run, g.rank, g.compile_id, g.gb_id, g.gb_type, g.reason,
       g.frame_file || ':' || g.frame_line AS user_frame, g.frame_func AS user_function,
       g.lib_file || coalesce(':' || g.lib_line, '') || coalesce(' in ' || g.lib_func, '') AS library_frame,
       g.occurrences, g.explanation, g.hints, g.user_stack, g.site_break AS break_key, g.file, g.line_no, g.run_id
FROM graph_break_sites() g JOIN runs r USING (run_id)
WHERE g.run_id IN (SELECT run_id FROM selected_runs_or_newest($run_id, NULL, NULL, NULL))
  AND ($compile_id IS NULL OR g.compile_id = $compile_id) AND ($rank IS NULL OR g.rank = TRY_CAST($rank AS INTEGER))
ORDER BY g.rank NULLS FIRST, g.file, g.line_no;

-- title: Kernels of one compile
-- question: Which kernels did this compile generate, of which backend and kind, fusing which ops, and were they cache hits?
-- params: run_id (optional: id, id prefix, name or name prefix; default: the newest run), compile_id (optional: F/C, or !A/F/C; default: every compile of the run), rank (optional: one rank)
SELECT r.name AS run, k.rank, k.compile_id, k.kernel_name, k.backend, k.kind, k.fused_ops, k.graph, k.cache_hit,
       k.file, k.line_no, k.run_id
FROM kernels k JOIN runs r USING (run_id)
WHERE k.run_id IN (SELECT run_id FROM selected_runs_or_newest($run_id, NULL, NULL, NULL))
  AND ($compile_id IS NULL OR k.compile_id = $compile_id) AND ($rank IS NULL OR k.rank = TRY_CAST($rank AS INTEGER))
ORDER BY k.rank NULLS FIRST, k.compile_id, k.file, k.line_no, k.kernel_name;

-- title: Metrics of one compile
-- question: What did torch's compilation_metrics say about this compile: times, graph size, guards, cache counts, restarts, failure, versions?
-- params: run_id (optional: id, id prefix, name or name prefix; default: the newest run), compile_id (optional: F/C, or !A/F/C; default: every compile of the run), rank (optional: one rank)
-- One row per compilation_metrics record (`kind`: compilation_metrics, bwd_compilation_metrics, ...);
-- `stack_trace`: the stack that entered the compile as torch logged it, outermost first.
SELECT r.name AS run, m.rank, m.compile_id, m.kind, m.co_name, function_file(m.co_file, m.co_filename) AS function_file,
       m.co_firstlineno, m.entire_frame_compile_time_s, m.backend_compile_time_s, m.inductor_compile_time_s,
       m.code_gen_time_s, m.graph_op_count, m.graph_node_count, m.graph_input_count, m.guard_count,
       m.shape_env_guard_count, m.cache_size, m.accumulated_cache_size, m.num_graph_breaks, m.recompile_reason,
       m.restart_reasons, m.fail_type, m.fail_reason, m.has_guarded_code, m.is_forward, m.cuda_version,
       m.triton_version, m.pytorch_version, m.python_version, m.stack_trace, m.ts, m.file, m.line_no, m.run_id
FROM compilation_metrics m JOIN runs r USING (run_id)
WHERE m.run_id IN (SELECT run_id FROM selected_runs_or_newest($run_id, NULL, NULL, NULL))
  AND ($compile_id IS NULL OR m.compile_id = $compile_id) AND ($rank IS NULL OR m.rank = TRY_CAST($rank AS INTEGER))
ORDER BY m.rank NULLS FIRST, m.compile_id, m.line_no;

-- title: Graphs and code torch logged for a compile
-- question: For a compile (or every compile of the selected runs; with no selection, of the newest run), which graphs, generated code, guards and error tracebacks did the trace log — the Dynamo graph, the AOT / FX graphs, the output code — with their text and where they are logged?
-- params: run_id (optional: id, id prefix, name or name prefix; default: the newest run, when since, until and tag are not given either), since (optional), until (optional), tag (optional: key=value), compile_id (optional: F/C, or !A/F/C)
-- `what`: the record's event key, or its artifact's name (fx_graph_runnable, dynamo_error). `payload` is
-- the text as logged (pt2logs keeps payloads up to 24 MiB; NULL beyond, see ingest_errors); order: the
-- stages in the order torch runs them. The files TORCH_COMPILE_DEBUG=1 wrote (`what` = compile_debug:<kind>:
-- fx_graph_readable, fx_graph_transformed, fx_graph_runnable, ir_pre_fusion, ir_post_fusion, output_code) name
-- no compile: every one of the run's is listed, with compile_id NULL, whatever compile_id asks.
SELECT r.name AS run, e.rank AS rank, e.compile_id AS compile_id, coalesce(e.artifact_name, e.event_type) AS what,
       CASE coalesce(e.artifact_name, e.event_type)
            WHEN 'dynamo_error' THEN 0 WHEN 'dynamo_output_graph' THEN 1 WHEN 'aot_joint_graph' THEN 2
            WHEN 'aot_forward_graph' THEN 3 WHEN 'aot_backward_graph' THEN 4 WHEN 'aot_inference_graph' THEN 5
            WHEN 'inductor_post_grad_graph' THEN 6 WHEN 'fx_graph_runnable' THEN 7 WHEN 'inductor_output_code' THEN 8
            WHEN 'dynamo_cpp_guards_str' THEN 9 END AS stage,
       e.file AS file, e.line_no AS line_no, e.payload_bytes, e.payload
FROM events e JOIN runs r USING (run_id)
WHERE e.run_id IN (SELECT run_id FROM selected_runs_or_newest($run_id, $since, $until, $tag)) AND since_partition(e.ingest_date, $since)
  AND ($compile_id IS NULL OR e.compile_id = $compile_id)
  AND coalesce(e.artifact_name, e.event_type) IN ('dynamo_error', 'dynamo_output_graph', 'aot_joint_graph', 'aot_forward_graph',
      'aot_backward_graph', 'aot_inference_graph', 'inductor_post_grad_graph', 'fx_graph_runnable', 'inductor_output_code',
      'dynamo_cpp_guards_str')
UNION ALL
SELECT r.name, d.rank, NULL, 'compile_debug:' || d.kind,
       CASE d.kind WHEN 'fx_graph_readable' THEN 3 WHEN 'fx_graph_transformed' THEN 6 WHEN 'fx_graph_runnable' THEN 7
                   WHEN 'ir_pre_fusion' THEN 7 WHEN 'ir_post_fusion' THEN 7 WHEN 'output_code' THEN 8 END,
       d.file, 1, d.n_bytes, d.text
FROM debug_artifacts d JOIN runs r USING (run_id)
WHERE d.run_id IN (SELECT run_id FROM selected_runs_or_newest($run_id, $since, $until, $tag)) AND since_partition(d.ingest_date, $since)
  AND d.kind <> 'provenance'
ORDER BY run, rank NULLS FIRST, compile_id NULLS LAST, file, stage, line_no;

-- title: Kernel provenance
-- question: Which user line made each generated kernel? Per compile, each kernel with the post-grad FX nodes fused into it, the Dynamo graph nodes they came from, and the user lines of their stack traces (inductor's provenance tracking: INDUCTOR_PROVENANCE=1 or TORCH_COMPILE_DEBUG=1).
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
SELECT r.name AS run, p.rank, coalesce(p.compile_id, 'aot') AS compile_id, p.kernel_name, p.kernel_index,
       array_to_string(p.post_nodes, ', ') AS fx_nodes, array_to_string(p.pre_nodes, ', ') AS graph_nodes,
       CASE WHEN p.user_file IS NOT NULL THEN concat(p.user_file, ':', p.user_line) END AS user_line,
       p.user_func, p.user_code, p.file, p.line_no
FROM kernel_provenance p JOIN runs r USING (run_id)
WHERE p.run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(p.ingest_date, $since)
ORDER BY run, p.rank NULLS FIRST, p.line_no, p.kernel_index NULLS LAST, p.kernel_name, p.user_line;

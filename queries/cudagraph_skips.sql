-- title: CUDA-graph skips
-- question: Why did reduce-overhead (CUDA graphs) fall back to eager or record again: each reason (mutated inputs, CPU tensors, dynamic shapes re-recording, an incompatible op...), for which functions, from which user line, how often? Rows come from compilation_metrics.cudagraph_skip_reason in the trace, or from TORCH_LOGS=cudagraphs lines.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
-- event: skip (cudagraphs not used), rerecord, rerecord_limit (eager from then on), too_many_sizes;
-- count: rows (compiles or messages); max_count: the re-recording limit or number of sizes the message gave.
SELECT c.event, c.reason_kind, c.reason,
       string_agg(DISTINCT coalesce(c.co_name, c.function), ', ') AS functions,
       min(c.frame_file || ':' || c.frame_line) AS location,
       count(*) AS count,
       max(c.count) AS max_count,
       count(DISTINCT c.run_id) AS runs
FROM cudagraph_skips c
WHERE c.run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(c.ingest_date, $since)
GROUP BY ALL
ORDER BY count DESC, c.event, c.reason;

-- title: vLLM compiles per compile range
-- question: Which compile ranges (or shapes) did vLLM compile or load from its cache, in how long, in which process? One row per range and process, from vLLM's log lines.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), limit (optional: rows, default 50)
SELECT run_id, rank, process, pid, tag,
       CASE kind WHEN 'compile_range' THEN 'compiled' ELSE 'from cache' END AS how,
       compile_range, range_start, range_end, dynamic, seconds, ts, file, line_no
FROM vllm_log_events
WHERE kind IN ('compile_range', 'cache_load')
  AND run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag))
ORDER BY run_id, ts NULLS LAST, line_no
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 50);

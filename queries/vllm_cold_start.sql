-- title: vLLM cold start
-- question: How long did each vLLM run take to get ready, and where did the time go: Dynamo bytecode transform, compiling each compile range (cold), loading compiled graphs from vLLM's cache (warm), CUDA graph capture? Was it a cold, warm or mixed start, or a failed warm start (an AOT artifact that failed to load, so vLLM compiled again), and vLLM's reason? The slowest process's figures (vLLM's workers compile at the same time); only runs with vLLM lines or artifacts.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
SELECT run_id, run, started_at, model, vllm_version, start, failed_loads, load_failure_reason, rank, processes,
       dynamo_s, compile_s, ranges_compiled, cache_load_s, ranges_loaded, cudagraph_s, cudagraph_gib,
       cold_start_s, torch_compile_s, engine_init_s, piecewise_compiles, round(piecewise_s, 3) AS piecewise_s
FROM vllm_cold_starts($run_id, $since, $until, $tag)
ORDER BY started_at DESC NULLS LAST, run;

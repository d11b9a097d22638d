-- title: A vLLM run's cold start in parts
-- what: From vllm_log_events (vLLM's log lines): per process, Dynamo bytecode transform, compiles per compile range (cold), loads of compiled graphs from vLLM's cache (warm), AOT artifacts that failed to load (a failed warm start: vLLM compiles again, decorators.py `Compiling model again due to a load failure from …, reason: …`), torch.compile's total, CUDA graph capture; the run gets the figures of its slowest process (vLLM's workers compile at the same time), the engine's model, version and init time. From vllm_compiles (the TORCH_TRACE artifacts): the piecewise compiles, their time, the model. Read by the vllm_cold_start and vllm_cold_vs_warm queries, summary and the dashboard (docs/vllm.md).
-- params: p_run (a run id, id prefix, name or name prefix; NULL: every run), p_since (runs started at or after; NULL: no bound), p_until (runs started before; NULL: no bound), p_tag (KEY=VALUE; NULL: any)
-- columns: run_id, run, started_at, model (the run's model tag, else the engine's, else the trace's), vllm_version, start (failed warm start: a process's AOT artifact failed to load and it compiled again; cold: compiled and loaded nothing; warm: only loaded, graphs or an AOT artifact; mixed: both; NULL when the logs say neither), failed_loads (the processes whose AOT load failed), load_failure_reason (vLLM's reason, the first one logged), rank, pid (the slowest process), processes, dynamo_s, compile_s, ranges_compiled, cache_load_s, ranges_loaded, torch_compile_s, cudagraph_s, cudagraph_gib, cold_start_s (dynamo + compiles + cache loads + CUDA graphs), engine_init_s, piecewise_compiles, piecewise_s
CREATE OR REPLACE MACRO vllm_cold_starts(p_run, p_since, p_until, p_tag) AS TABLE
WITH sel AS (SELECT run_id FROM selected_runs(p_run, p_since, p_until, p_tag)),
e AS (SELECT * FROM vllm_log_events WHERE run_id IN (SELECT run_id FROM sel)),
proc AS (
  SELECT run_id, rank, pid,
         sum(seconds) FILTER (WHERE kind = 'dynamo_transform') AS dynamo_s,
         sum(seconds) FILTER (WHERE kind = 'compile_range') AS compile_s,
         count(*) FILTER (WHERE kind = 'compile_range') AS ranges_compiled,
         sum(seconds) FILTER (WHERE kind = 'cache_load') AS cache_load_s,
         count(*) FILTER (WHERE kind = 'cache_load') AS ranges_loaded,
         count(*) FILTER (WHERE kind = 'aot_load') AS aot_loads,
         count(*) FILTER (WHERE kind = 'aot_load_failed') AS aot_load_failures,
         sum(seconds) FILTER (WHERE kind = 'compile_total') AS torch_compile_s,
         sum(seconds) FILTER (WHERE kind = 'cudagraph_capture') AS cudagraph_s,
         sum(gib) FILTER (WHERE kind = 'cudagraph_capture') AS cudagraph_gib
  FROM e WHERE kind IN ('dynamo_transform', 'compile_range', 'cache_load', 'aot_load', 'aot_load_failed', 'compile_total', 'cudagraph_capture')
  GROUP BY run_id, rank, pid),
slowest AS (
  SELECT * FROM proc
  QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY
      coalesce(torch_compile_s, coalesce(dynamo_s, 0) + coalesce(compile_s, 0) + coalesce(cache_load_s, 0)) + coalesce(cudagraph_s, 0) DESC,
      rank NULLS LAST, pid) = 1),
eng AS (
  SELECT run_id, max(seconds) FILTER (WHERE kind = 'engine_init') AS engine_init_s,
         arg_min(model, line_no) FILTER (WHERE kind = 'engine_config') AS model,
         arg_min(vllm_version, line_no) FILTER (WHERE kind = 'engine_config') AS vllm_version,
         count(DISTINCT (rank, pid)) FILTER (WHERE kind IN ('dynamo_transform', 'compile_range', 'cache_load')) AS processes,
         count(DISTINCT (rank, pid)) FILTER (WHERE kind = 'aot_load_failed') AS failed_loads,
         arg_min(reason, line_no) FILTER (WHERE kind = 'aot_load_failed') AS load_failure_reason
  FROM e GROUP BY run_id),
tr AS (
  SELECT run_id, arg_min(model, ts) AS model, sum(n_piecewise) AS piecewise_compiles, sum(piecewise_s) AS piecewise_s
  FROM vllm_compiles WHERE run_id IN (SELECT run_id FROM sel) GROUP BY run_id)
SELECT r.run_id, r.name AS run, r.started_at,
       coalesce(tag_value(r.tags, 'model'), eng.model, tr.model) AS model, eng.vllm_version,
       CASE WHEN coalesce(eng.failed_loads, 0) > 0 THEN 'failed warm start'
            WHEN coalesce(s.ranges_compiled, 0) > 0 AND coalesce(s.ranges_loaded, 0) + coalesce(s.aot_loads, 0) = 0 THEN 'cold'
            WHEN coalesce(s.ranges_compiled, 0) = 0 AND coalesce(s.ranges_loaded, 0) + coalesce(s.aot_loads, 0) > 0 THEN 'warm'
            WHEN coalesce(s.ranges_compiled, 0) > 0 THEN 'mixed' END AS start,
       coalesce(eng.failed_loads, 0) AS failed_loads, eng.load_failure_reason,
       s.rank, s.pid, coalesce(eng.processes, 0) AS processes,
       s.dynamo_s, s.compile_s, coalesce(s.ranges_compiled, 0) AS ranges_compiled,
       s.cache_load_s, coalesce(s.ranges_loaded, 0) AS ranges_loaded, s.torch_compile_s, s.cudagraph_s, s.cudagraph_gib,
       round(coalesce(s.dynamo_s, 0) + coalesce(s.compile_s, 0) + coalesce(s.cache_load_s, 0) + coalesce(s.cudagraph_s, 0), 3) AS cold_start_s,
       eng.engine_init_s, tr.piecewise_compiles, tr.piecewise_s
FROM runs r LEFT JOIN slowest s USING (run_id) LEFT JOIN eng USING (run_id) LEFT JOIN tr USING (run_id)
WHERE r.run_id IN (SELECT run_id FROM sel) AND (s.run_id IS NOT NULL OR eng.run_id IS NOT NULL OR tr.run_id IS NOT NULL);

-- title: Why a vLLM start was not warm
-- question: Why was a vLLM start not warm? For each start (run and rank) that compiled instead of loading vLLM's compile cache, or whose AOT artifact failed to load: vLLM's reason, the hash of its cache directory and the factors vLLM logged for it (env, config, compiler, code hashes; `torch.compile cache factors`, a DEBUG line), against the last warm start of the same model before it, and which factors differ.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), limit (optional: rows, default 50)
WITH run_model AS (
  SELECT r.run_id, r.name AS run, r.started_at,
         coalesce(tag_value(r.tags, 'model'), arg_min(e.model, e.line_no) FILTER (WHERE e.kind = 'engine_config')) AS model
  FROM runs r JOIN vllm_log_events e USING (run_id)
  GROUP BY r.run_id, r.name, r.started_at, r.tags),
starts AS (
  SELECT e.run_id, e.rank,
         count(*) FILTER (WHERE e.kind = 'compile_range') AS compiled,
         count(*) FILTER (WHERE e.kind IN ('cache_load', 'aot_load')) AS loaded,
         count(*) FILTER (WHERE e.kind = 'aot_load_failed') AS load_failures,
         arg_min(e.reason, e.line_no) FILTER (WHERE e.kind = 'aot_load_failed') AS load_failure_reason,
         arg_min(regexp_extract(e.path, 'torch_compile_cache/([0-9a-f]+)(?:/|$)', 1), e.line_no)
           FILTER (WHERE e.kind IN ('cache_dir', 'cache_factors')) AS cache_hash,
         arg_min(regexp_extract(e.message, 'env=(\S*)', 1), e.line_no) FILTER (WHERE e.kind = 'cache_factors') AS env_hash,
         arg_min(regexp_extract(e.message, 'cfg=(\S*)', 1), e.line_no) FILTER (WHERE e.kind = 'cache_factors') AS config_hash,
         arg_min(regexp_extract(e.message, 'comp=(\S*)', 1), e.line_no) FILTER (WHERE e.kind = 'cache_factors') AS compiler_hash,
         arg_min(regexp_extract(e.message, 'code=(\S*)', 1), e.line_no) FILTER (WHERE e.kind = 'cache_factors') AS code_hash
  FROM vllm_log_events e
  WHERE e.kind IN ('compile_range', 'cache_load', 'aot_load', 'aot_load_failed', 'cache_dir', 'cache_factors')
  GROUP BY e.run_id, e.rank),
classified AS (
  SELECT s.*, m.run, m.started_at, m.model,
         CASE WHEN s.load_failures > 0 THEN 'failed warm start'
              WHEN s.compiled > 0 AND s.loaded = 0 THEN 'cold'
              WHEN s.compiled > 0 THEN 'mixed'
              WHEN s.loaded > 0 THEN 'warm' END AS start
  FROM starts s JOIN run_model m USING (run_id)),
paired AS (
  SELECT c.*, w.run AS warm_run, w.cache_hash AS warm_cache_hash, w.env_hash AS warm_env_hash,
         w.config_hash AS warm_config_hash, w.compiler_hash AS warm_compiler_hash, w.code_hash AS warm_code_hash
  FROM classified c
  LEFT JOIN classified w ON w.start = 'warm' AND w.model IS NOT DISTINCT FROM c.model AND w.run_id <> c.run_id
       AND w.rank IS NOT DISTINCT FROM c.rank AND w.started_at <= c.started_at
  WHERE c.start IN ('cold', 'mixed', 'failed warm start')
    AND c.run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag))
  QUALIFY row_number() OVER (PARTITION BY c.run_id, c.rank ORDER BY w.started_at DESC NULLS LAST, w.run_id) = 1)
SELECT run, rank, started_at, model, start, load_failure_reason, cache_hash, warm_run, warm_cache_hash,
       CASE WHEN warm_run IS NULL THEN '(no earlier warm start of this model)'
            WHEN env_hash IS NULL OR warm_env_hash IS NULL THEN
              CASE WHEN cache_hash IS DISTINCT FROM warm_cache_hash THEN 'cache directory differs (factors not logged: run vLLM at DEBUG)'
                   ELSE 'same cache directory' END
            ELSE coalesce(nullif(concat_ws(', ',
                   CASE WHEN env_hash <> warm_env_hash THEN 'env' END,
                   CASE WHEN config_hash <> warm_config_hash THEN 'config' END,
                   CASE WHEN compiler_hash <> warm_compiler_hash THEN 'compiler' END,
                   CASE WHEN code_hash <> warm_code_hash THEN 'code' END), ''), 'no factor differs') END AS changed,
       env_hash, warm_env_hash, config_hash, warm_config_hash, compiler_hash, warm_compiler_hash, code_hash, warm_code_hash
FROM paired
ORDER BY started_at, run, rank NULLS FIRST
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 50);

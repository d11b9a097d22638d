-- title: vLLM cold vs warm starts
-- question: For each model (its `model` tag, else the model vLLM names), how long does a cold start (compiling) take against a warm one (loading vLLM's compile cache), in each part? Means over the selected runs, with how many runs each.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
SELECT coalesce(model, '(unknown model)') AS model, coalesce(start, '(unknown)') AS start,
       count(*) AS runs,
       round(avg(cold_start_s), 3) AS cold_start_s,
       round(avg(dynamo_s), 3) AS dynamo_s,
       round(avg(compile_s), 3) AS compile_s,
       round(avg(cache_load_s), 3) AS cache_load_s,
       round(avg(cudagraph_s), 3) AS cudagraph_s,
       round(min(cold_start_s), 3) AS fastest_s,
       round(max(cold_start_s), 3) AS slowest_s,
       max(started_at) AS last_started
FROM vllm_cold_starts($run_id, $since, $until, $tag)
GROUP BY ALL
ORDER BY model, start;

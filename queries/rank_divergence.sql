-- title: Rank divergence
-- question: In multi-rank runs, which ranks compiled, recompiled, hit caches, broke graphs, scheduled collectives, logged tensor metadata or ran graphs in an order differently from the majority?
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
WITH sel AS (
  SELECT r.run_id, r.name FROM runs r
  WHERE r.n_ranks > 1 AND r.run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(r.ingest_date, $since)),
ranks AS (
  SELECT run_id, unnest(ranks)::INTEGER AS rank FROM runs WHERE run_id IN (SELECT run_id FROM sel)),
per_rank AS (
  SELECT k.run_id, k.rank,
    (SELECT string_agg(DISTINCT compile_id, ' ' ORDER BY compile_id) FROM compilation_metrics m
      WHERE m.run_id = k.run_id AND m.rank = k.rank AND m.kind = 'compilation_metrics') AS compile_ids,
    (SELECT string_agg(cause, ' ' ORDER BY line_no) FROM recompiles x WHERE x.run_id = k.run_id AND x.rank = k.rank) AS recompile_seq,
    (SELECT string_agg(cache || ':' || outcome, ' ' ORDER BY line_no) FROM cache_events x WHERE x.run_id = k.run_id AND x.rank = k.rank) AS cache_seq,
    -- graph-break sites by identity (as in graph_break_hotspots): ranks on hosts with other install prefixes agree
    (SELECT string_agg(DISTINCT site_break || '@' || coalesce(site_file, '?') || ':' || coalesce(site_line, 0) || coalesce('>' || library_frame, ''), ' '
                       ORDER BY site_break || '@' || coalesce(site_file, '?') || ':' || coalesce(site_line, 0) || coalesce('>' || library_frame, ''))
      FROM graph_break_sites() x WHERE x.run_id = k.run_id AND x.rank = k.rank) AS break_set,
    -- tlparse's collective checks (rank_collective_checks): collectives in order, tensor metadata, execution order
    (SELECT string_agg(x.op || CASE WHEN x.op_type = 'collective' AND x.wait_for IS NULL THEN ' (no wait)' ELSE '' END, ' ' ORDER BY x.line_no, x.seq)
      FROM collective_schedule x WHERE x.run_id = k.run_id AND x.rank = k.rank AND x.artifact = 'inductor_collective_schedule'
        AND x.op_type = 'collective') AS coll_seq,
    (SELECT string_agg(coalesce(x.compile_id, '?') || ' ' || coalesce(x.op, '?') || ' ' || coalesce(x.outputs, ''), '; ' ORDER BY x.compile_id, x.line_no, x.seq)
      FROM collective_schedule x WHERE x.run_id = k.run_id AND x.rank = k.rank AND x.artifact = 'inductor_runtime_and_tensor_meta') AS tensor_meta,
    (SELECT string_agg(coalesce(x.compile_id, '?'), ' ' ORDER BY x.line_no, x.seq)
      FROM collective_schedule x WHERE x.run_id = k.run_id AND x.rank = k.rank AND x.artifact = 'graph_execution') AS exec_order,
    (SELECT count(*) FROM compilation_metrics m WHERE m.run_id = k.run_id AND m.rank = k.rank AND m.kind = 'compilation_metrics') AS compiles,
    (SELECT count(*) FROM recompiles x WHERE x.run_id = k.run_id AND x.rank = k.rank) AS recompiles,
    (SELECT coalesce(sum(occurrences), 0)::BIGINT FROM graph_breaks x WHERE x.run_id = k.run_id AND x.rank = k.rank) AS graph_breaks
  FROM ranks k),
long AS (
  UNPIVOT (SELECT run_id, rank, coalesce(compile_ids, '') AS compile_ids, coalesce(recompile_seq, '') AS recompile_seq,
                  coalesce(cache_seq, '') AS cache_seq, coalesce(break_set, '') AS break_set,
                  coalesce(coll_seq, '') AS coll_seq, coalesce(tensor_meta, '') AS tensor_meta, coalesce(exec_order, '') AS exec_order FROM per_rank)
  ON compile_ids, recompile_seq, cache_seq, break_set, coll_seq, tensor_meta, exec_order INTO NAME attr VALUE val),
votes AS (
  SELECT run_id, attr, val, count(*) AS n, min(rank) AS first_rank FROM long GROUP BY ALL),
-- the majority value of each attribute; a tie goes to the value of the lowest rank
maj AS (
  SELECT run_id, attr, arg_max(val, n * 1000000 - first_rank) AS val FROM votes GROUP BY ALL),
majority AS (
  PIVOT maj ON attr IN ('compile_ids', 'recompile_seq', 'cache_seq', 'break_set', 'coll_seq', 'tensor_meta', 'exec_order') USING min(val) GROUP BY run_id)
SELECT s.name AS run, p.rank, p.compiles, p.recompiles, p.graph_breaks,
       concat_ws(', ',
         CASE WHEN coalesce(p.compile_ids, '') <> m.compile_ids THEN 'compile ids' END,
         CASE WHEN coalesce(p.recompile_seq, '') <> m.recompile_seq THEN 'recompiles' END,
         CASE WHEN coalesce(p.cache_seq, '') <> m.cache_seq THEN 'cache outcomes' END,
         CASE WHEN coalesce(p.break_set, '') <> m.break_set THEN 'graph breaks' END,
         CASE WHEN coalesce(p.coll_seq, '') <> m.coll_seq THEN 'collective schedule' END,
         CASE WHEN coalesce(p.tensor_meta, '') <> m.tensor_meta THEN 'tensor metadata' END,
         CASE WHEN coalesce(p.exec_order, '') <> m.exec_order THEN 'execution order' END) AS differs_in,
       list_filter(string_split(coalesce(p.compile_ids, ''), ' '), lambda x: x <> '' AND NOT list_contains(string_split(m.compile_ids, ' '), x)) AS extra_compiles,
       list_filter(string_split(m.compile_ids, ' '), lambda x: x <> '' AND NOT list_contains(string_split(coalesce(p.compile_ids, ''), ' '), x)) AS missing_compiles
FROM per_rank p JOIN majority m USING (run_id) JOIN sel s USING (run_id)
ORDER BY run, p.rank;

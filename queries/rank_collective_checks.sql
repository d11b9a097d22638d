-- title: Rank collective checks
-- question: Do the ranks of a multi-rank run agree on what tlparse's multi-rank report compares (compile ids, cache outcomes, collective schedule with wait pairing, tensor metadata, runtime estimates, graph execution order)? One row per run and check with data; when they differ, each group of ranks with its value.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
-- The checks of tlparse's multi-rank report (meta-pytorch/tlparse src/lib.rs, the multi-rank
-- parse: compile id divergence, cache hit/miss sequence groups, collective op sequence groups,
-- tensor meta fingerprint groups, runtime estimation deltas, graph execution order; parsers.rs
-- check_collectives_parity: collectives without a wait), on the stored tables:
-- 1 compile ids: each rank's set of compile ids (compilation_metrics);
-- 2 cache outcomes: each rank's sequence of cache lookups and outcomes (cache_events);
-- 3 collective schedule: each rank's collectives of every graph in the order logged
--   (inductor_collective_schedule), a collective no wait pairs marked "(no wait)";
-- 4 tensor metadata: each graph's ops with their output shapes, strides and dtypes
--   (inductor_runtime_and_tensor_meta, LOG_TLPARSE=1), graphs by compile id;
-- 5 runtime estimates: each graph's estimated runtime (the sum of its ops'), graphs by compile id;
--   the detail gives the largest spread between the fastest and the slowest rank;
-- 6 execution order: the compile ids of the graphs that ran, in order (graph_execution, the last
--   one each rank logged). A rank without the check's data counts as "none".
-- A rank is a trace file's rank: from its name (dedicated_log_torch_trace_rank_N_*), else from its records
-- (copied traces were seen to repeat one envelope rank), as first_divergence takes it.
WITH sel AS (
  SELECT run_id, name FROM runs
  WHERE run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(ingest_date, $since)),
cs AS (SELECT * REPLACE (coalesce(TRY_CAST(regexp_extract(file, 'rank_(\d+)', 1) AS INTEGER), rank) AS rank) FROM collective_schedule WHERE run_id IN (SELECT run_id FROM sel)),
cm AS (SELECT * REPLACE (coalesce(TRY_CAST(regexp_extract(file, 'rank_(\d+)', 1) AS INTEGER), rank) AS rank) FROM compilation_metrics WHERE kind = 'compilation_metrics' AND run_id IN (SELECT run_id FROM sel)),
ce AS (SELECT * REPLACE (coalesce(TRY_CAST(regexp_extract(file, 'rank_(\d+)', 1) AS INTEGER), rank) AS rank) FROM cache_events WHERE run_id IN (SELECT run_id FROM sel)),
procs AS (
  SELECT DISTINCT run_id, rank FROM cm WHERE rank IS NOT NULL
  UNION SELECT DISTINCT run_id, rank FROM cs WHERE rank IS NOT NULL),
multi AS (SELECT run_id FROM procs GROUP BY run_id HAVING count(*) > 1),
tm AS (
  SELECT *, max(line_no) OVER (PARTITION BY run_id, rank, compile_id) AS last_line
  FROM cs WHERE artifact = 'inductor_runtime_and_tensor_meta'),
graph_meta AS (
  SELECT run_id, rank, compile_id,
         string_agg(concat(regexp_replace(coalesce(op, '?'), '^.*(c10d_functional|c10d)[.:]+', ''), ' ', coalesce(outputs, '[]')), '; ' ORDER BY seq) AS meta,
         sum(estimated_runtime_ns) AS runtime_ns
  FROM tm WHERE line_no = last_line GROUP BY ALL),
last_exec AS (
  SELECT run_id, rank, max(line_no) AS line_no FROM cs WHERE artifact = 'graph_execution' GROUP BY ALL),
vals AS (
  SELECT run_id, rank, 1 AS ord, 'compile ids' AS check_name,
         string_agg(DISTINCT compile_id, ' ' ORDER BY compile_id) AS val, NULL::DOUBLE AS runtime_ms
  FROM cm WHERE run_id IN (SELECT run_id FROM multi) GROUP BY ALL
  UNION ALL
  SELECT run_id, rank, 2, 'cache outcomes', string_agg(cache || ' ' || outcome, ', ' ORDER BY line_no), NULL
  FROM ce WHERE run_id IN (SELECT run_id FROM multi) GROUP BY ALL
  UNION ALL
  SELECT run_id, rank, 3, 'collective schedule',
         string_agg(concat(regexp_replace(regexp_replace(op, '^.*(c10d_functional|c10d)[.:]+', ''), '(\.default)$', ''),
                           CASE WHEN op_type = 'collective' AND wait_for IS NULL THEN ' (no wait)' END), ', ' ORDER BY line_no, seq)
           FILTER (WHERE op_type = 'collective'), NULL
  FROM cs WHERE artifact = 'inductor_collective_schedule' AND run_id IN (SELECT run_id FROM multi) GROUP BY ALL
  UNION ALL
  SELECT run_id, rank, 4, 'tensor metadata', string_agg(concat(compile_id, ': ', meta), ' | ' ORDER BY compile_id), NULL
  FROM graph_meta WHERE run_id IN (SELECT run_id FROM multi) GROUP BY ALL
  UNION ALL
  SELECT run_id, rank, 5, 'runtime estimates',
         string_agg(concat(compile_id, ': ', round(runtime_ns / 1e6, 3), ' ms'), ', ' ORDER BY compile_id), NULL
  FROM graph_meta WHERE run_id IN (SELECT run_id FROM multi) GROUP BY ALL
  UNION ALL
  SELECT c.run_id, c.rank, 6, 'execution order', string_agg(coalesce(c.compile_id, '?'), ' ' ORDER BY c.seq), NULL
  FROM cs c JOIN last_exec l ON l.run_id = c.run_id AND l.rank IS NOT DISTINCT FROM c.rank AND l.line_no = c.line_no
  WHERE c.artifact = 'graph_execution' AND c.run_id IN (SELECT run_id FROM multi) GROUP BY ALL),
checks AS (SELECT DISTINCT run_id, ord, check_name FROM vals),
grid AS (
  SELECT k.run_id, k.ord, k.check_name, p.rank, coalesce(v.val, 'none') AS val
  FROM checks k JOIN procs p USING (run_id)
  LEFT JOIN vals v ON v.run_id = k.run_id AND v.ord = k.ord AND v.rank = p.rank),
groups AS (
  SELECT run_id, ord, check_name, val, list(rank ORDER BY rank) AS ranks FROM grid GROUP BY ALL),
spread AS (
  SELECT run_id, compile_id, round((max(runtime_ns) - min(runtime_ns)) / 1e6, 3) AS delta_ms,
         arg_min(rank, runtime_ns) AS fastest, arg_max(rank, runtime_ns) AS slowest
  FROM graph_meta WHERE run_id IN (SELECT run_id FROM multi) GROUP BY ALL)
SELECT s.name AS run, g.check_name AS "check", count(*) = 1 AS agree, sum(len(g.ranks))::INTEGER AS ranks,
       CASE WHEN count(*) = 1 THEN left(any_value(g.val), 200)
            ELSE string_agg(concat('rank', CASE WHEN len(g.ranks) > 1 THEN 's ' ELSE ' ' END, array_to_string(g.ranks, ','), ': ', left(g.val, 160)),
                            ' | ' ORDER BY g.ranks[1]) END AS "values",
       CASE WHEN g.ord = 5 THEN (SELECT concat('largest spread ', max(delta_ms), ' ms (', arg_max(compile_id, delta_ms), ': rank ',
                                              arg_max(fastest, delta_ms), ' fastest, rank ', arg_max(slowest, delta_ms), ' slowest)')
                                 FROM spread x WHERE x.run_id = g.run_id) END AS detail
FROM groups g JOIN sel s USING (run_id)
GROUP BY s.name, g.run_id, g.ord, g.check_name
ORDER BY run, g.ord;

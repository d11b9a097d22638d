-- title: First divergence between ranks
-- question: In a multi-rank run, where do the ranks' compiles first differ (frame order, compile ids, graph breaks, recompile guards, collectives in the graph, its ops' tensor metadata and runtime estimates, graph size, failures, cache outcomes), with both sides?
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
-- A process is a trace file (its rank from the file name, else from its records: copied traces
-- were seen to repeat the envelope's rank). Each process's
-- compiles in the order they started are steps 1, 2, ...; at each step the processes are compared on
-- these facts, in this order: the frame compiled, its compile id, its graph breaks, the guard that
-- failed (recompile: cause and subject, not the text, whose object ids differ between processes),
-- the collectives in its graph (its last inductor_collective_schedule when logged, else the
-- collective ops among compilation_metrics.non_compliant_ops, also when that schedule is not JSON, e.g.
-- cut off by a kill; waits left out), its ops' output shapes, strides and dtypes and its estimated
-- runtime (its last inductor_runtime_and_tensor_meta, LOG_TLPARSE=1: tlparse's tensor metadata and
-- runtime checks; 'not logged' without one), the graph's op count,
-- the failure, the cache outcomes. One row per run with a difference: the first step and fact where a
-- process differs from the majority (a tie goes to the lowest rank's value); `side_a` = the majority,
-- `side_b` = the others, each with its ranks and where its compile is logged.
WITH sel AS (
  SELECT run_id, name FROM runs
  WHERE run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(ingest_date, $since)),
cm0 AS (
  SELECT run_id, file, rank, compile_id, line_no, co_name, co_filename, co_firstlineno, graph_op_count, fail_type,
         list_filter(coalesce(non_compliant_ops, []), lambda x: regexp_matches(x, 'c10d|all_reduce|all_gather|reduce_scatter|all_to_all|broadcast') AND NOT x LIKE '%wait_tensor%') AS coll_ops,
         coalesce(start_time, epoch(ts)) AS t
  FROM compilation_metrics WHERE kind = 'compilation_metrics' AND run_id IN (SELECT run_id FROM sel)),
procs AS (
  SELECT c.run_id, c.file, coalesce(TRY_CAST(regexp_extract(c.file, 'rank_(\d+)', 1) AS INTEGER), any_value(f.rank), min(c.rank)) AS rank
  FROM cm0 c LEFT JOIN files f ON f.run_id = c.run_id AND f.relpath = c.file
  GROUP BY c.run_id, c.file),
multi AS (SELECT run_id FROM procs GROUP BY run_id HAVING count(*) > 1),
cm AS (
  SELECT c.*, row_number() OVER (PARTITION BY c.run_id, c.file ORDER BY c.t, c.line_no) AS step
  FROM cm0 c WHERE c.run_id IN (SELECT run_id FROM multi)),
gb AS (
  SELECT run_id, file, compile_id,
         string_agg(coalesce(gb_type, '?') || ' at ' || regexp_replace(coalesce(user_filename, '?'), '^.*/', '') || ':' || coalesce(user_lineno, 0),
                    '; ' ORDER BY line_no) AS breaks
  FROM graph_breaks WHERE run_id IN (SELECT run_id FROM multi) GROUP BY ALL),
rc AS (
  SELECT run_id, file, compile_id, string_agg(cause || ' on ' || coalesce(guard_subject, '?'), '; ' ORDER BY line_no) AS guard
  FROM recompiles WHERE run_id IN (SELECT run_id FROM multi) GROUP BY ALL),
sched AS (
  SELECT run_id, file, compile_id,
         array_to_string(list_transform(list_filter(CAST(json_extract_string(CASE WHEN json_valid(arg_max(payload, line_no)) THEN arg_max(payload, line_no) END, '$[*]') AS VARCHAR[]),
                                                    lambda x: NOT x LIKE '%wait_tensor%'),
                                        lambda x: regexp_replace(regexp_replace(x, '^.*(c10d_functional|c10d)[.:]+', ''), '_?(\.default)?$', '')), ', ') AS coll
  FROM events WHERE artifact_name = 'inductor_collective_schedule' AND run_id IN (SELECT run_id FROM multi) AND payload IS NOT NULL
  GROUP BY ALL),
tm0 AS (
  SELECT run_id, file, compile_id, line_no, seq, op, outputs, estimated_runtime_ns,
         max(line_no) OVER (PARTITION BY run_id, file, compile_id) AS last_line
  FROM collective_schedule WHERE artifact = 'inductor_runtime_and_tensor_meta' AND run_id IN (SELECT run_id FROM multi)),
tmeta AS (
  SELECT run_id, file, compile_id,
         string_agg(concat(regexp_replace(coalesce(op, '?'), '^.*(c10d_functional|c10d)[.:]+', ''), ' ', coalesce(outputs, '[]')), '; ' ORDER BY seq) AS meta,
         concat(round(sum(estimated_runtime_ns) / 1e6, 3), ' ms') AS runtime
  FROM tm0 WHERE line_no = last_line GROUP BY ALL),
cache AS (
  SELECT run_id, file, compile_id, string_agg(cache || ' ' || outcome, ', ' ORDER BY line_no) AS caches
  FROM cache_events WHERE run_id IN (SELECT run_id FROM multi) GROUP BY ALL),
steps AS (SELECT run_id, max(step) AS n FROM cm GROUP BY run_id),
grid AS (SELECT p.run_id, p.file, p.rank, s.step FROM procs p JOIN steps x USING (run_id), range(1, x.n + 1) s(step)),
facts AS (
  SELECT g.run_id, g.file AS pfile, g.rank, g.step, c.compile_id, c.line_no,
         (SELECT count(*) FROM cm c2 WHERE c2.run_id = g.run_id AND c2.file = g.file) AS n_compiles,
         c.co_name IS NULL AS missing,
         concat(c.co_name, ' (', regexp_replace(coalesce(c.co_filename, '?'), '^.*/', ''), ':', c.co_firstlineno, ')') AS frame,
         coalesce(b.breaks, 'none') AS breaks, coalesce(r.guard, 'none') AS guard,
         coalesce(nullif(s.coll, ''), nullif(array_to_string(list_transform(c.coll_ops,
                    lambda x: regexp_replace(regexp_replace(x, '^.*(c10d_functional|c10d)[.:]+', ''), '_?(\.default)?$', '')), ', '), ''), 'none') AS coll,
         coalesce(t.meta, 'not logged') AS tensor_meta, coalesce(t.runtime, 'not logged') AS runtime,
         coalesce(c.graph_op_count::VARCHAR || ' ops', '?') AS graph, coalesce(c.fail_type, 'none') AS failure,
         coalesce(x.caches, 'none') AS caches
  FROM grid g
  LEFT JOIN cm c ON c.run_id = g.run_id AND c.file = g.file AND c.step = g.step
  LEFT JOIN gb b ON b.run_id = g.run_id AND b.file = g.file AND b.compile_id = c.compile_id
  LEFT JOIN rc r ON r.run_id = g.run_id AND r.file = g.file AND r.compile_id = c.compile_id
  LEFT JOIN sched s ON s.run_id = g.run_id AND s.file = g.file AND s.compile_id = c.compile_id
  LEFT JOIN cache x ON x.run_id = g.run_id AND x.file = g.file AND x.compile_id = c.compile_id
  LEFT JOIN tmeta t ON t.run_id = g.run_id AND t.file = g.file AND t.compile_id = c.compile_id),
long AS (
  SELECT run_id, pfile, rank, step, line_no, compile_id, a.ord, a.attr,
         CASE WHEN missing THEN concat('none (this rank made ', n_compiles, ' compile', CASE WHEN n_compiles = 1 THEN '' ELSE 's' END, ')') ELSE a.val END AS val
  FROM facts, (SELECT unnest([
      {'ord': 1, 'attr': 'frame', 'val': frame}, {'ord': 2, 'attr': 'compile id', 'val': compile_id},
      {'ord': 3, 'attr': 'graph breaks', 'val': breaks}, {'ord': 4, 'attr': 'recompile guard', 'val': guard},
      {'ord': 5, 'attr': 'collectives', 'val': coll}, {'ord': 6, 'attr': 'tensor metadata', 'val': tensor_meta},
      {'ord': 7, 'attr': 'runtime estimate', 'val': runtime}, {'ord': 8, 'attr': 'graph', 'val': graph},
      {'ord': 9, 'attr': 'failure', 'val': failure}, {'ord': 10, 'attr': 'cache outcomes', 'val': caches}], recursive := true)) a),
votes AS (SELECT run_id, step, ord, val, count(*) AS n, min(coalesce(rank, 1 << 30)) AS first_rank FROM long GROUP BY ALL),
maj AS (SELECT run_id, step, ord, arg_max(val, n * 1000000000 - first_rank) AS val FROM votes GROUP BY ALL),
diff AS (
  SELECT l.run_id, l.step, l.ord, l.attr FROM long l JOIN maj m USING (run_id, step, ord) WHERE l.val IS DISTINCT FROM m.val),
first AS (SELECT run_id, arg_min({'step': step, 'ord': ord, 'attr': attr}, step * 100 + ord) AS d FROM diff GROUP BY run_id),
sides AS (
  SELECT f.run_id, f.d.step AS step, f.d.attr AS what, l.val = m.val AS majority,
         list(l.rank ORDER BY l.rank) AS ranks, any_value(l.val) AS val, min(l.compile_id) AS compile_id,
         arg_min(CASE WHEN l.line_no IS NOT NULL THEN l.pfile || ':' || l.line_no END, coalesce(l.rank, 1 << 30)) AS where_logged
  FROM first f JOIN long l ON l.run_id = f.run_id AND l.step = f.d.step AND l.ord = f.d.ord
  JOIN maj m ON m.run_id = f.run_id AND m.step = f.d.step AND m.ord = f.d.ord
  GROUP BY f.run_id, f.d.step, f.d.attr, l.val = m.val, CASE WHEN l.val = m.val THEN '' ELSE l.val END)
SELECT s.name AS run, a.step, a.what, coalesce(a.compile_id, b.compile_id) AS compile_id,
       a.ranks AS ranks_a, a.val AS side_a, a.where_logged AS where_a,
       b.ranks AS ranks_b, b.val AS side_b, b.where_logged AS where_b, a.run_id
FROM sides a JOIN sides b ON b.run_id = a.run_id AND NOT b.majority
JOIN sel s ON s.run_id = a.run_id
WHERE a.majority
ORDER BY run, b.ranks;

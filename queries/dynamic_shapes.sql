-- title: Dynamic shapes
-- question: Which input dims became dynamic (a symbol and what it stands for), which got specialized to a constant and by which user line, which guards were put on symbols, and which guards hit a data-dependent value? One row per symbol or shape event kind, user line and compile. Rows come from the trace (create_symbol, symbolic_shape_specialization, guard_added_fast; guard_added and data-dependent errors under TORCH_DTRACE).
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), event (optional: create_symbol, create_unbacked_symbol, specialization, guard, guard_fast, propagate_real_tensors or data_dependent_error)
-- event: what happened: a symbol created (the dim is dynamic), specialization (fixed to `value`), a guard
-- on symbols, a data-dependent error (a guard on an unbacked value); location: the user line that did it.
SELECT r.name AS run, d.rank, d.compile_id, d.event,
       d.symbol,
       array_to_string(d.sources, ', ') AS sources,
       coalesce(d.expr, '') AS expr,
       coalesce(d.value, '') AS value,
       coalesce(d.value_range, '') AS value_range,
       coalesce(d.reason, '') AS reason,
       d.frame_file || ':' || d.frame_line AS location,
       coalesce(d.frame_code, '') AS code,
       count(*) AS count
FROM dynamic_shapes d JOIN runs r USING (run_id)
WHERE d.run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(d.ingest_date, $since)
  AND ($event IS NULL OR d.event = $event)
GROUP BY ALL
ORDER BY run, d.rank NULLS FIRST, min(d.file), min(d.line_no);

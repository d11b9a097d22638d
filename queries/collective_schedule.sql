-- title: Collective schedule
-- question: Which collectives does each rank's compiled graph issue, in which order, and is each paired with its wait? Per rank and compile, the scheduler's collectives and waits (inductor_collective_schedule), with the op's runtime estimate and output shapes where LOG_TLPARSE=1 logged them.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
WITH s AS (
  SELECT c.* FROM collective_schedule c
  WHERE c.run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(c.ingest_date, $since)),
-- the runtime-and-meta record's collectives and waits, in their order, to lay beside the schedule's
meta AS (
  SELECT run_id, rank, file, compile_id, estimated_runtime_ns, outputs,
         row_number() OVER (PARTITION BY run_id, file, compile_id, line_no ORDER BY seq) - 1 AS k
  FROM s WHERE artifact = 'inductor_runtime_and_tensor_meta' AND op_type IN ('collective', 'wait')
  QUALIFY line_no = max(line_no) OVER (PARTITION BY run_id, file, compile_id)),
sched AS (
  SELECT *, row_number() OVER (PARTITION BY run_id, file, compile_id, line_no ORDER BY seq) - 1 AS k
  FROM s WHERE artifact = 'inductor_collective_schedule')
SELECT r.name AS run, x.rank, x.compile_id, x.seq, x.op_type,
       regexp_replace(regexp_replace(x.op, '^.*(c10d_functional|c10d)[.:]+', ''), '(\.default)$', '') AS op,
       CASE WHEN x.wait_for IS NOT NULL THEN x.wait_for::VARCHAR
            WHEN x.op_type = 'collective' THEN 'no wait' WHEN x.op_type = 'wait' THEN 'no collective' END AS paired_with,
       m.estimated_runtime_ns, m.outputs, x.op AS op_full, x.file, x.line_no
FROM sched x JOIN runs r USING (run_id)
LEFT JOIN meta m ON m.run_id = x.run_id AND m.file = x.file AND m.compile_id IS NOT DISTINCT FROM x.compile_id AND m.k = x.k
ORDER BY run, x.rank NULLS FIRST, x.line_no, x.seq;

-- title: Compiles a bug report can describe
-- question: Which compiles of a run failed (exception, message, stack, user frame) and which succeeded, failed ones first, with where each is logged — the compile `pt2logs bundle` describes?
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), compile_id (optional: F/C, or !A/F/C)
-- One row per compile (rank, compile id) from compilation_metrics, and per failed compile a text log
-- names (no metrics there). `failed` first, then by time. A compile refused by the recompile limit
-- names no function of its own: its frame's (the same F in F/C) is shown. exc_message and stack as logged; the
-- trace's dynamo_error artifact (the full traceback) is in `bug_report_artifacts`.
WITH sel AS (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)),
m AS (
  SELECT run_id, rank, compile_id, any_value(frame_id) AS frame_id, any_value(co_name) AS co_name,
         any_value(function_file(co_file, co_filename)) AS fn_file, any_value(co_firstlineno) AS fn_line,
         min(ts) AS ts, sum(entire_frame_compile_time_s) AS compile_s, any_value(fail_type) AS fail_type,
         any_value(cuda_version) AS cuda_version, any_value(triton_version) AS triton_version,
         any_value(file) AS file, min(line_no) AS line_no
  FROM compilation_metrics
  WHERE kind = 'compilation_metrics' AND run_id IN (SELECT run_id FROM sel)
    AND ($compile_id IS NULL OR compile_id = $compile_id)
  GROUP BY run_id, rank, compile_id),
f AS (
  SELECT run_id, rank, compile_id, any_value(frame_id) AS frame_id, arg_min(exc_type, line_no) AS exc_type, arg_min(coalesce(exc_message, fail_reason), line_no) AS exc_message,
         arg_min(stack, line_no) AS stack, arg_min(failure_id(failure_key, fail_type, fail_reason), line_no) AS failure_key,
         arg_min(frame_file, line_no) AS frame_file, arg_min(frame_line, line_no) AS frame_line,
         arg_min(co_name, line_no) AS co_name, min(ts) AS ts, arg_min(file, line_no) AS file, min(line_no) AS line_no,
         arg_min(source, line_no) AS source
  FROM failures
  WHERE NOT is_restart AND run_id IN (SELECT run_id FROM sel) AND ($compile_id IS NULL OR compile_id IS NOT DISTINCT FROM $compile_id)
  GROUP BY run_id, rank, compile_id),
fr AS (  -- a frame's function, from any of its compiles (a compile refused by the recompile limit names none)
  SELECT run_id, rank, frame_id AS frame, any_value(co_name) AS co_name,
         any_value(function_file(co_file, co_filename)) AS fn_file, any_value(co_firstlineno) AS fn_line
  FROM compilation_metrics WHERE co_name IS NOT NULL AND run_id IN (SELECT run_id FROM sel) GROUP BY ALL)
SELECT r.name AS run, coalesce(m.rank, f.rank) AS rank, coalesce(m.compile_id, f.compile_id) AS compile_id,
       coalesce(m.co_name, f.co_name, fr.co_name) AS function, coalesce(m.fn_file, fr.fn_file) AS function_file,
       coalesce(m.fn_line, fr.fn_line) AS function_line,
       f.run_id IS NOT NULL OR m.fail_type IS NOT NULL AS failed,
       coalesce(f.exc_type, m.fail_type) AS exc_type, f.exc_message, f.stack, f.failure_key,
       f.frame_file, f.frame_line, round(m.compile_s, 3) AS compile_s, m.cuda_version, m.triton_version,
       coalesce(f.file, m.file) AS file, coalesce(f.line_no, m.line_no) AS line_no, coalesce(f.source, 'trace') AS source,
       coalesce(m.run_id, f.run_id) AS run_id
FROM m FULL JOIN f ON f.run_id = m.run_id AND f.rank IS NOT DISTINCT FROM m.rank AND f.compile_id IS NOT DISTINCT FROM m.compile_id
JOIN runs r ON r.run_id = coalesce(m.run_id, f.run_id)
LEFT JOIN fr ON fr.run_id = coalesce(m.run_id, f.run_id) AND fr.rank IS NOT DISTINCT FROM coalesce(m.rank, f.rank)
           AND fr.frame = coalesce(m.frame_id, f.frame_id)
ORDER BY run, failed DESC, coalesce(f.ts, m.ts) NULLS LAST, rank NULLS FIRST, compile_id;

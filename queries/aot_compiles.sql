-- title: AOTInductor and export compiles
-- question: Which AOTInductor / export compiles did the run make, how long did each take, how many kernels and how much generated code did it write, and did it finish?
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
SELECT r.name AS run, a.rank, a.compile_id, a.kind, a.exported,
       round(a.compile_s, 2) AS compile_s, a.n_kernels AS kernels,
       a.wrapper_bytes, a.kernel_bytes, a.header_bytes,
       CASE WHEN a.finished THEN 'finished' ELSE 'the log ends inside it' END AS status,
       a.wrapper_path, a.file, a.line_no
FROM aot_compiles a JOIN runs r USING (run_id)
WHERE a.run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(a.ingest_date, $since)
ORDER BY run, a.rank NULLS FIRST, a.line_no;

-- title: What a bug report says about a run
-- question: For each run: torch, Python, CUDA and Triton versions, the command, host, working directory and git commit `pt2logs run` recorded, how it ended, which log formats were read, and where its pt2logs_run.json record is?
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
-- cuda_version / triton_version: the first compile's (compilation_metrics); record_path: the file
-- `pt2logs run` wrote (it also lists the debug environment variables in force), NULL for other runs.
WITH sel AS (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)),
m AS (SELECT run_id, arg_min(cuda_version, ts) FILTER (WHERE cuda_version IS NOT NULL) AS cuda_version,
             arg_min(triton_version, ts) FILTER (WHERE triton_version IS NOT NULL) AS triton_version
      FROM compilation_metrics WHERE run_id IN (SELECT run_id FROM sel) GROUP BY run_id)
SELECT r.name AS run, r.run_id, r.torch_version AS torch, r.python_version AS python, m.cuda_version, m.triton_version,
       r.command, r.host, r.cwd, r.git_commit, r.exit_code, r.exit_signal, r.wall_s, r.formats, r.n_ranks, r.started_at,
       r.tags, r.root, r.pt2logs_version,
       (SELECT any_value(f.path) FROM files f WHERE f.run_id = r.run_id AND f.format = 'run_record') AS record_path
FROM runs r LEFT JOIN m USING (run_id)
WHERE r.run_id IN (SELECT run_id FROM sel) AND since_partition(r.ingest_date, $since)
ORDER BY r.started_at DESC NULLS LAST, r.name;

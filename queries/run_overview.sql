-- title: Run overview
-- question: For each run: how many compiles, how long, how many recompiles, graph breaks, kernels, failures, cache hits? Counts and seconds add up all the run's ranks (ranks); compiles_per_rank_max and compile_s_per_rank_max are the busiest rank's.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
WITH sel AS (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)),
m AS (SELECT run_id, count(*) AS compiles, count(DISTINCT (co_name, co_filename, co_firstlineno)) AS frames,
             sum(entire_frame_compile_time_s) AS compile_s,
             count(*) FILTER (WHERE fail_type IS NOT NULL) AS failed
      FROM compilation_metrics WHERE kind = 'compilation_metrics' AND run_id IN (SELECT run_id FROM sel) GROUP BY run_id),
bw AS (SELECT run_id, count(*) AS bwd_compiles, sum(coalesce(inductor_compile_time_s, duration_us / 1e6)) AS bwd_s
       FROM compilation_metrics WHERE kind = 'bwd_compilation_metrics' AND run_id IN (SELECT run_id FROM sel) GROUP BY run_id),
pr AS (SELECT run_id, max(n) AS compiles_per_rank_max, max(s) AS compile_s_per_rank_max
       FROM (SELECT run_id, rank, count(*) AS n, sum(entire_frame_compile_time_s) AS s FROM compilation_metrics
             WHERE kind = 'compilation_metrics' AND run_id IN (SELECT run_id FROM sel) GROUP BY run_id, rank)
       GROUP BY run_id),
rc AS (SELECT run_id, count(*) AS recompiles, count(*) FILTER (WHERE is_limit_hit) AS limit_hits
       FROM recompiles WHERE run_id IN (SELECT run_id FROM sel) GROUP BY run_id),
gb AS (SELECT run_id, sum(occurrences)::BIGINT AS graph_breaks,
              count(DISTINCT (site_break, site_file, site_line, library_frame)) AS break_sites
       FROM graph_break_sites() WHERE run_id IN (SELECT run_id FROM sel) GROUP BY run_id),
k AS (SELECT run_id, count(*) AS kernels FROM kernels WHERE run_id IN (SELECT run_id FROM sel) GROUP BY run_id),
c AS (SELECT run_id, count(*) FILTER (WHERE outcome = 'hit') AS cache_hits, count(*) AS cache_lookups
      FROM cache_events WHERE run_id IN (SELECT run_id FROM sel) GROUP BY run_id)
SELECT r.run_id, r.name AS run, r.started_at, r.ended_at,
       round(epoch(r.ended_at) - epoch(r.started_at), 1) AS wall_s,
       r.n_ranks AS ranks, r.torch_version AS torch, r.torch_version_from AS torch_from, r.python_version AS python, r.n_files AS files, r.n_events AS events,
       r.n_errors AS errors, r.n_warnings AS warnings,
       coalesce(m.compiles, 0) AS compiles, coalesce(m.frames, 0) AS frames,
       round(coalesce(m.compile_s, 0), 3) AS compile_s,
       coalesce(bw.bwd_compiles, 0) AS bwd_compiles, round(coalesce(bw.bwd_s, 0), 3) AS bwd_compile_s,
       coalesce(rc.recompiles, 0) AS recompiles, coalesce(rc.limit_hits, 0) AS limit_hits,
       coalesce(gb.graph_breaks, 0) AS graph_breaks, coalesce(gb.break_sites, 0) AS break_sites,
       coalesce(k.kernels, 0) AS kernels, coalesce(m.failed, 0) AS failures,
       coalesce(c.cache_hits, 0) AS cache_hits, coalesce(c.cache_lookups, 0) AS cache_lookups,
       coalesce(pr.compiles_per_rank_max, 0) AS compiles_per_rank_max,
       round(coalesce(pr.compile_s_per_rank_max, 0), 3) AS compile_s_per_rank_max
FROM runs r LEFT JOIN m USING (run_id) LEFT JOIN pr USING (run_id) LEFT JOIN bw USING (run_id) LEFT JOIN rc USING (run_id)
     LEFT JOIN gb USING (run_id) LEFT JOIN k USING (run_id) LEFT JOIN c USING (run_id)
WHERE r.run_id IN (SELECT run_id FROM sel)
ORDER BY r.started_at DESC NULLS LAST, run;

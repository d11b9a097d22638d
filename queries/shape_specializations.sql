-- title: Shape specializations
-- question: Which dims that could have been dynamic were specialized to a constant, by which user line, and how often (each compile that did it)? A dim marked dynamic (mark_dynamic) and then specialized fails the compile with ConstraintViolationError; under automatic dynamic shapes it recompiles per value.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value)
SELECT array_to_string(d.sources, ', ') AS sources,
       string_agg(DISTINCT d.value, ', ' ORDER BY d.value) AS values,
       min(d.reason) AS reason,
       d.frame_file || ':' || d.frame_line AS location,
       min(coalesce(d.frame_code, '')) AS code,
       count(*) AS compiles,
       count(DISTINCT d.run_id) AS runs
FROM dynamic_shapes d
WHERE d.run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(d.ingest_date, $since)
  AND d.event = 'specialization'
GROUP BY ALL
ORDER BY compiles DESC, location, sources;

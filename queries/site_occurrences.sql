-- title: One site across the fleet
-- question: Where did this graph-break site, failure or failed guard occur: in which runs and compiles, how often, first and last seen?
-- params: site (optional: NULL matches nothing; a graph-break site's break key, e.g. gb0170; a failure key; or a failed guard as KIND:SOURCE, e.g. size:x.size()[0]), run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), limit (optional, default 500)
-- One row per occurrence (what = graph_break, failure or guard), newest first; the keys are the
-- identities of docs/architecture.md ("Identities"), so the same site on every machine is one site.
WITH sel AS (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)),
o AS (
  SELECT 'graph_break' AS what, run_id, rank, compile_id, ts, site_file || ':' || site_line AS location,
         library_frame AS detail, occurrences, file, line_no
  FROM graph_break_sites() WHERE site_break = $site AND run_id IN (SELECT run_id FROM sel) AND since_partition(ingest_date, $since)
  UNION ALL
  SELECT 'failure', run_id, rank, compile_id, ts, frame_file || ':' || frame_line, exc_type || ': ' || message_line(exc_message),
         1, file, line_no
  FROM failures WHERE failure_id(failure_key, exc_type, exc_message) = $site AND run_id IN (SELECT run_id FROM sel)
    AND since_partition(ingest_date, $since)
  UNION ALL
  SELECT 'guard', run_id, rank, compile_id, ts, function_file(co_file, co_filename) || ':' || co_firstlineno,
         reason, 1, file, line_no
  FROM recompiles WHERE guard_kind || ':' || guard_source = $site AND run_id IN (SELECT run_id FROM sel)
    AND since_partition(ingest_date, $since))
SELECT o.what, r.name AS run, o.rank, o.compile_id, o.ts, o.location, o.detail, o.occurrences,
       count(*) OVER () AS total, count(DISTINCT o.run_id) OVER () AS runs,
       min(o.ts) OVER () AS first_seen, max(o.ts) OVER () AS last_seen, o.file, o.line_no, o.run_id
FROM o JOIN runs r USING (run_id)
ORDER BY o.ts DESC NULLS LAST, run, o.rank NULLS FIRST, o.compile_id
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 500);

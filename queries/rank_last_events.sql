-- title: Each rank's last trace event
-- question: Where did each rank of a run stop: its last trace event, of what kind, in which compile, at which file and line, and when?
-- params: run_id (optional: id, id prefix, name or name prefix; meant for one run), since (optional), until (optional), tag (optional: key=value)
-- The record with the latest time of each rank's trace (the last one in the file on a tie): its
-- event key (an artifact's name for artifacts; for a chromium event, its name and B/E/i phase, e.g.
-- `inductor_compile (E)`; the event key alone when the payload is not JSON, e.g. cut off by a kill;
-- `unreadable record` when its header is not JSON either), its compile id, the file and line of its header.
WITH sel AS (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)),
last AS (
  SELECT run_id, rank, arg_max({'file': file, 'line_no': line_no, 'kind': coalesce(artifact_name, event_type),
                                'compile_id': compile_id}, (ts, line_no)) AS e,
         max(ts) AS at, count(*) AS events
  FROM events WHERE run_id IN (SELECT run_id FROM sel) AND since_partition(ingest_date, $since)
  GROUP BY run_id, rank),
named AS (
  SELECT l.run_id, l.rank, TRY(json_extract_string(x.payload, '$.name') || ' (' || json_extract_string(x.payload, '$.ph') || ')') AS name
  FROM last l JOIN events x ON x.run_id = l.run_id AND x.rank IS NOT DISTINCT FROM l.rank AND x.file = l.e.file AND x.line_no = l.e.line_no
  WHERE l.e.kind = 'chromium_event' AND x.run_id IN (SELECT run_id FROM sel) AND x.event_type = 'chromium_event')
SELECT r.name AS run, l.rank, coalesce(n.name, l.e.kind, 'unreadable record') AS last_event, l.e.compile_id AS compile_id,
       l.e.file AS file, l.e.line_no AS line_no, l.at, l.events, l.run_id
FROM last l JOIN runs r USING (run_id) LEFT JOIN named n ON n.run_id = l.run_id AND n.rank IS NOT DISTINCT FROM l.rank
ORDER BY run, l.rank NULLS FIRST;

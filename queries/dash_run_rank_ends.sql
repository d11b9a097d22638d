-- title: Where each rank stopped
-- question: When did each rank log its first and last trace event, how long was it silent before the run ended, and how did it end?
-- params: run_id (optional: id, id prefix, name or name prefix; meant for one run), since (optional), until (optional), tag (optional: key=value)
-- Per rank of rank_outcomes, seconds since its run started: `logging` from its first to its last
-- trace event, `silent` from its last event to the run's end (the stderr capture's last time, pt2logs
-- run's end or the newest file mtime). A rank without trace events has no bars.
WITH ro AS (SELECT o.*, r.started_at, r.name FROM rank_outcomes($run_id, $since, $until, $tag) o JOIN runs r USING (run_id)),
lab AS (
  SELECT *, concat_ws(' ', CASE WHEN (SELECT count(DISTINCT run_id) FROM ro) > 1 THEN name END,
                      CASE WHEN rank IS NOT NULL THEN 'rank ' || rank ELSE 'process' END, '· ' || outcome) AS label,
         epoch(first_ts) - epoch(started_at) AS a, epoch(last_event_at) - epoch(started_at) AS b, epoch(run_end) - epoch(started_at) AS c
  FROM ro WHERE last_event_at IS NOT NULL)
SELECT label, rank, 'logging (first to last trace event)' AS part, 1 AS ord, round(a, 3) AS start_s, round(b, 3) AS end_s,
       outcome, why, evidence, last_event_at, silent_s, row_number() OVER (ORDER BY name, rank) AS seq
FROM lab
UNION ALL
SELECT label, rank, 'silent until the run ended', 2, round(b, 3), round(greatest(c, b), 3),
       outcome, why, evidence, last_event_at, silent_s, row_number() OVER (ORDER BY name, rank)
FROM lab
ORDER BY seq, ord;

-- title: Hung, killed and crashed runs this week
-- question: How many runs of the last 7 days hung, were killed, crashed or failed, per tag value (or all runs together), against the 7 days before?
-- params: until (optional: end of "this week", default now), tag (optional: key=value), by (optional: a tag key, e.g. model; default: all runs in one bar)
-- Outcomes as run_outcomes decides them. One row per tag value with a bad run (hung, killed,
-- crashed or failed) this week or the week before: `bad` = hung + killed + crashed + failed of this
-- week, `runs` all its runs this week, `bad_last_week` the bad runs of the 7 days before,
-- `examples` up to three of this week's bad runs with their outcome.
WITH b AS (SELECT coalesce($until, now()) AS t1),
o AS (
  SELECT o.run, o.outcome, r.started_at,
         CASE WHEN r.started_at >= b.t1 - INTERVAL 7 DAY THEN 'this week' ELSE 'last week' END AS week,
         CASE WHEN $by IS NULL THEN 'all runs' ELSE coalesce(tag_value(r.tags, $by), '(no ' || $by || ' tag)') END AS series
  -- the bounds as expressions of parameters, not of b's column: a macro called with a column of another
  -- table is evaluated as a lateral join, which reads every run's rows (kept outcomes included)
  FROM b, run_outcome_rows(NULL, coalesce($until, now()) - INTERVAL 14 DAY, coalesce($until, now()), $tag) o
       JOIN runs r USING (run_id))
SELECT series,
       count(*) FILTER (WHERE week = 'this week') AS runs,
       count(*) FILTER (WHERE week = 'this week' AND outcome = 'hung') AS hung,
       count(*) FILTER (WHERE week = 'this week' AND outcome = 'killed') AS killed,
       count(*) FILTER (WHERE week = 'this week' AND outcome = 'crashed') AS crashed,
       count(*) FILTER (WHERE week = 'this week' AND outcome = 'failed') AS failed,
       count(*) FILTER (WHERE week = 'this week' AND outcome = 'completed') AS completed,
       count(*) FILTER (WHERE week = 'this week' AND outcome = 'unknown') AS unknown,
       count(*) FILTER (WHERE week = 'this week' AND outcome IN ('hung', 'killed', 'crashed', 'failed')) AS bad,
       count(*) FILTER (WHERE week = 'last week' AND outcome IN ('hung', 'killed', 'crashed', 'failed')) AS bad_last_week,
       coalesce(array_to_string(list_slice(list(run || ' (' || outcome || ')' ORDER BY started_at DESC)
                FILTER (WHERE week = 'this week' AND outcome IN ('hung', 'killed', 'crashed', 'failed')), 1, 3), ', '), '') AS examples
FROM o
GROUP BY series
HAVING count(*) FILTER (WHERE outcome IN ('hung', 'killed', 'crashed', 'failed')) > 0
ORDER BY bad DESC, runs DESC, series;

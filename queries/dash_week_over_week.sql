-- title: This week vs last week
-- question: How do the runs of the last 7 days compare with the 7 days before: compile time, recompiles, graph breaks, failures, new break sites? Counts and seconds add up every rank of every selected run.
-- params: until (optional: end of "this week", default now), tag (optional: key=value)
-- Counts follow run_overview: compile time and failures from compilation_metrics, recompiles from
-- recompiles, graph breaks = sum of occurrences. new_break_sites: sites (as in graph_break_hotspots:
-- break id + user line + library function) seen this week in no earlier run.
WITH b AS (SELECT coalesce($until, now()) AS t1),
sel AS (
  SELECT r.run_id, r.started_at,
         CASE WHEN r.started_at >= b.t1 - INTERVAL 7 DAY THEN 'this week' ELSE 'last week' END AS week
  FROM runs r, b
  WHERE r.run_id IN (SELECT run_id FROM selected_runs(NULL, b.t1 - INTERVAL 14 DAY, b.t1, $tag))),
-- each run's totals and break sites: run_facts() (kept per commit); the bounds as expressions of parameters, not
-- of b's column (a macro called with another table's column is joined laterally: every run's rows read)
m AS (SELECT run_id, compile_s, compiles, failures, recompiles, graph_breaks
      FROM run_facts(NULL, coalesce($until, now()) - INTERVAL 14 DAY, coalesce($until, now()), $tag) WHERE what = 'run'),
sites AS (
  SELECT g.site_break, g.site_file, g.site_line, g.library_frame, min(r.started_at) AS first_seen
  FROM run_facts(NULL, NULL, coalesce($until, now()), $tag) g JOIN runs r USING (run_id)
  WHERE g.what = 'site'
  GROUP BY ALL),
new_sites AS (
  SELECT count(*) AS n FROM sites, b WHERE first_seen >= b.t1 - INTERVAL 7 DAY),
weeks AS (
  SELECT * FROM (VALUES ('this week', 0), ('last week', 1)) w(week, ago))
SELECT w.week,
       (b.t1 - to_days(7 * (w.ago + 1)))::TIMESTAMPTZ AS window_start,
       (b.t1 - to_days(7 * w.ago))::TIMESTAMPTZ AS window_end,
       count(s.run_id) AS runs,
       round(coalesce(sum(m.compile_s), 0), 3) AS compile_s,
       coalesce(sum(m.compiles), 0)::BIGINT AS compiles,
       coalesce(sum(m.recompiles), 0)::BIGINT AS recompiles,
       coalesce(sum(m.graph_breaks), 0)::BIGINT AS graph_breaks,
       coalesce(sum(m.failures), 0)::BIGINT AS failures,
       CASE WHEN w.week = 'this week' THEN (SELECT n FROM new_sites) ELSE NULL END AS new_break_sites
FROM weeks w CROSS JOIN b
     LEFT JOIN sel s ON s.week = w.week
     LEFT JOIN m ON m.run_id = s.run_id
GROUP BY w.week, w.ago, b.t1
ORDER BY w.ago;

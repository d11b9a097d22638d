-- dash_week_over_week as it was before run_facts() (it read the tables, not each run's kept facts); the oracle of queries/dash_week_over_week.sql
-- (tests/test_run_facts.py).
WITH b AS (SELECT coalesce($until, now()) AS t1),
sel AS (
  SELECT r.run_id, r.started_at,
         CASE WHEN r.started_at >= b.t1 - INTERVAL 7 DAY THEN 'this week' ELSE 'last week' END AS week
  FROM runs r, b
  WHERE r.run_id IN (SELECT run_id FROM selected_runs(NULL, b.t1 - INTERVAL 14 DAY, b.t1, $tag))),
m AS (SELECT run_id, sum(entire_frame_compile_time_s) AS compile_s, count(*) AS compiles,
             count(*) FILTER (WHERE fail_type IS NOT NULL) AS failures
      FROM compilation_metrics WHERE kind = 'compilation_metrics' AND run_id IN (SELECT run_id FROM sel) GROUP BY run_id),
rc AS (SELECT run_id, count(*) AS recompiles FROM recompiles WHERE run_id IN (SELECT run_id FROM sel) GROUP BY run_id),
gb AS (SELECT run_id, sum(occurrences) AS graph_breaks FROM graph_breaks WHERE run_id IN (SELECT run_id FROM sel) GROUP BY run_id),
sites AS (
  SELECT g.site_break, g.site_file, g.site_line, g.library_frame, min(r.started_at) AS first_seen
  FROM graph_break_sites() g JOIN runs r USING (run_id), b
  WHERE r.started_at < b.t1 AND tag_match(r.tags, $tag)
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
       coalesce(sum(rc.recompiles), 0)::BIGINT AS recompiles,
       coalesce(sum(gb.graph_breaks), 0)::BIGINT AS graph_breaks,
       coalesce(sum(m.failures), 0)::BIGINT AS failures,
       CASE WHEN w.week = 'this week' THEN (SELECT n FROM new_sites) ELSE NULL END AS new_break_sites
FROM weeks w CROSS JOIN b
     LEFT JOIN sel s ON s.week = w.week
     LEFT JOIN m ON m.run_id = s.run_id LEFT JOIN rc ON rc.run_id = s.run_id LEFT JOIN gb ON gb.run_id = s.run_id
GROUP BY w.week, w.ago, b.t1
ORDER BY w.ago;

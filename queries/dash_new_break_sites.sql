-- title: New graph-break sites
-- question: Which graph-break sites (break id + user line + library function, as in graph_break_hotspots) first appeared in the last 7 days, in no earlier run?
-- params: until (optional: end of "this week", default now), tag (optional: key=value), limit (optional, default 10)
WITH b AS (SELECT coalesce($until, now()) AS t1),
g AS (
  SELECT g.site_break, g.site_file, g.site_line, g.library_frame, g.gb_type, g.occurrences, g.run_id, r.started_at
  FROM graph_break_sites() g JOIN runs r USING (run_id), b
  WHERE r.started_at < b.t1 AND tag_match(r.tags, $tag))
SELECT min(gb_type) AS gb_type,
       site_file || ':' || site_line AS location,
       library_frame,
       sum(occurrences)::BIGINT AS occurrences,
       count(DISTINCT run_id) AS runs,
       min(started_at) AS first_seen
FROM g, b
GROUP BY site_break, site_file, site_line, library_frame, b.t1
HAVING min(started_at) >= b.t1 - INTERVAL 7 DAY
ORDER BY occurrences DESC, runs DESC, gb_type, location, library_frame
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 10);

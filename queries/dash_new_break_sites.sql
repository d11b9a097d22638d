-- title: New graph-break sites
-- question: Which graph-break sites (break type + user location) first appeared in the last 7 days, in no earlier run?
-- params: until (optional: end of "this week", default now), tag (optional: key=value), limit (optional, default 10)
WITH b AS (SELECT coalesce($until, now()) AS t1),
g AS (
  SELECT coalesce(g.gb_id, g.gb_type) AS site, g.gb_type, g.user_filename, g.user_lineno, g.occurrences,
         g.run_id, r.started_at
  FROM graph_breaks g JOIN runs r USING (run_id), b
  WHERE r.started_at < b.t1 AND tag_match(r.tags, $tag))
SELECT min(gb_type) AS gb_type,
       user_filename || ':' || user_lineno AS location,
       sum(occurrences)::BIGINT AS occurrences,
       count(DISTINCT run_id) AS runs,
       min(started_at) AS first_seen
FROM g, b
GROUP BY site, user_filename, user_lineno, b.t1
HAVING min(started_at) >= b.t1 - INTERVAL 7 DAY
ORDER BY occurrences DESC, runs DESC, gb_type, location
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 10);

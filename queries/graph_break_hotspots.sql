-- title: Graph-break hotspots
-- question: Where does the graph break, how often, in how many runs? Grouped by break type and user location.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), limit (optional, default 50)
SELECT coalesce(gb_id, '') AS gb_id,
       gb_type,
       user_filename || ':' || user_lineno AS location,
       sum(occurrences)::BIGINT AS occurrences,
       count(DISTINCT run_id) AS runs,
       count(DISTINCT (run_id, compile_id)) AS compiles,
       min(co_name) AS function,
       min(explanation) AS explanation
FROM graph_breaks
WHERE run_id IN (SELECT run_id FROM selected_runs($run_id, $since, $until, $tag)) AND since_partition(ingest_date, $since)
GROUP BY coalesce(gb_id, ''), gb_type, user_filename, user_lineno
ORDER BY occurrences DESC, runs DESC, gb_type
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 50);

-- title: Graph-break hotspots
-- question: Where does the graph break, how often, in how many runs? One row per site: the break (its gb id, else its type) at the user line that led to it, and the library function it happened in when that is not user code; the same site on every machine, Python and torch version.
-- params: run_id (optional: id, id prefix, name or name prefix), since (optional), until (optional), tag (optional: key=value), limit (optional, default 50)
-- location = the user frame (file relative to the run's root : line); library_frame = package-relative
-- file and function (torch's line numbers are not part of a site). See docs/architecture.md, "Identities".
-- each run's breaks by site: run_facts() (kept per commit)
SELECT coalesce(min(gb_id), '') AS gb_id,
       min(gb_type) AS gb_type,
       site_file || ':' || site_line AS location,
       library_frame,
       sum(occurrences)::BIGINT AS occurrences,
       count(DISTINCT run_id) AS runs,
       sum(site_compiles)::BIGINT AS compiles,
       min(co_name) AS function,
       min(explanation) AS explanation,
       site_break AS break_key
FROM run_facts($run_id, $since, $until, $tag)
WHERE what = 'site' AND since_partition(ingest_date, $since)
GROUP BY site_break, site_file, site_line, library_frame
ORDER BY occurrences DESC, runs DESC, gb_type, location, library_frame
LIMIT coalesce(TRY_CAST($limit AS INTEGER), 50);

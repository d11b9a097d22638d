-- title: Graph breaks with their site
-- what: The identity of a graph-break site (docs/tables.md#graph_breaks): break id + user frame + library frame. Rows ingested before the identity columns (break_key NULL) fall back to their raw location.
-- params: none
-- columns: graph_breaks.* (every column of the graph_breaks view), site_break (break_key, else gb_id, else gb_type), site_file (frame_file; user_filename before v2), site_line (frame_line; user_lineno before v2), library_frame (lib_file in lib_func)
CREATE OR REPLACE MACRO graph_break_sites() AS TABLE
SELECT *, coalesce(break_key, gb_id, gb_type) AS site_break,
       CASE WHEN break_key IS NULL THEN user_filename ELSE frame_file END AS site_file,
       CASE WHEN break_key IS NULL THEN user_lineno ELSE frame_line END AS site_line,
       lib_file || coalesce(' in ' || lib_func, '') AS library_frame
FROM graph_breaks;

-- title: The integers of a compile id, for rows stored without them
-- what: F and C of a compile id [!A/]F/C (torch's text form; !A alone has neither): its last two parts when both are numbers (up to 9 digits: they fit an INTEGER), readers/identity_cols.frame_ids' rule in SQL. The views apply it only where a row has no frame_id (files written before the frame_id / frame_compile_id columns: compilation_metrics, recompiles, graph_breaks, failures v2, cache_events v2), so an older warehouse answers as a new one; the one place SQL reads a compile id's parts, queries read the columns.
-- params: compile_id (the text compile id)
-- returns: STRUCT(frame_id INTEGER, frame_compile_id INTEGER), NULL fields when the id has no F/C
CREATE OR REPLACE MACRO compile_id_frames(compile_id) AS
{'frame_id': TRY_CAST(regexp_extract(compile_id, '(?:^|/)(\d{1,9})/\d{1,9}$', 1) AS INTEGER),
 'frame_compile_id': TRY_CAST(regexp_extract(compile_id, '(?:^|/)\d{1,9}/(\d{1,9})$', 1) AS INTEGER)};

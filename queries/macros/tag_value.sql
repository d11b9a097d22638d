-- title: A tag's value by key
-- what: Through a JSON Pointer (~ and / escaped), so any key works, quotes and $ included; never pasted into a JSON path.
-- params: tags (runs.tags, JSON text), tag_key (the key)
-- returns: VARCHAR: the tag's value, NULL when the run has no such tag
CREATE OR REPLACE MACRO tag_value(tags, tag_key) AS
json_extract_string(tags, '/' || replace(replace(tag_key, '~', '~0'), '/', '~1'));

-- title: A failure's identity
-- what: failure_key; in rows older than v2 the type and the reason's first line.
-- params: failure_key, fail_type, fail_reason
-- returns: VARCHAR
CREATE OR REPLACE MACRO failure_id(failure_key, fail_type, fail_reason) AS
coalesce(failure_key, concat_ws(': ', fail_type, split_part(fail_reason, chr(10), 1)));

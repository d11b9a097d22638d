-- title: A compiled function's file identity
-- what: A compiled function's identity is its file's identity + co_name + for user code its first line (function_line()): co_file, the raw co_filename in rows older than v2.
-- params: co_file (the identity column), co_filename (the raw file)
-- returns: VARCHAR
CREATE OR REPLACE MACRO function_file(co_file, co_filename) AS coalesce(co_file, co_filename);

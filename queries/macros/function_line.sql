-- title: A compiled function's line, when it is part of its identity
-- what: Two `forward`s of one user file are two functions: their first line is part of the identity; a library's lines move between releases, so they are not.
-- params: co_file_kind (user, library, stdlib or other), co_firstlineno
-- returns: INTEGER: the first line for user code (and rows without a kind), NULL for library, stdlib and other code
CREATE OR REPLACE MACRO function_line(co_file_kind, co_firstlineno) AS
CASE WHEN co_file_kind IN ('library', 'stdlib', 'other') THEN NULL ELSE co_firstlineno END;

-- title: A user-code path relative to its run's root
-- what: The views make the user-code path columns of a table (its declaration's run_relative=) relative to runs.user_root with it; a path of another kind (library, stdlib: keys already), without a root or outside it is kept as it is.
-- params: path (the stored path), kind (its *_kind column; NULL counts as user code), root (runs.user_root, ending in /)
-- returns: VARCHAR: the path, relative to root when it is user code under it
CREATE OR REPLACE MACRO run_relative(path, kind, root) AS
CASE WHEN path IS NULL OR coalesce(kind, 'user') <> 'user' OR root IS NULL OR NOT starts_with(path, root)
     THEN path ELSE substr(path, length(root) + 1) END;

-- title: A source's rank
-- what: When one run has several sources describing the same compiles (a trace and its stderr capture), the views keep, per run, the rows of its best source (lowest rank); sources with no rank (e.g. spyre) describe other things and are always kept. The ranks are the formats' own (Format.source_rank, pt2logs.readers.source_ranks()).
-- params: source (a row's source column)
-- fills: source_ranks
-- returns: INTEGER: the source's rank, NULL for a source without one
CREATE OR REPLACE MACRO source_rank(source) AS CASE source {{source_ranks}} ELSE NULL END;

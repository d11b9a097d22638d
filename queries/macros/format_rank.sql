-- title: The rank of the source a file format yields
-- what: The same ranks as source_rank(), keyed by the input format that yields each ranked source: the views choose each run's best source from the formats of its files (_run_source).
-- params: format (files.format)
-- fills: format_ranks
-- returns: INTEGER: the rank of the source the format yields, NULL for a format that yields none
CREATE OR REPLACE MACRO format_rank(format) AS CASE format {{format_ranks}} ELSE NULL END;

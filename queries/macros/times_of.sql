-- title: A count in words
-- what: `1 time`, `3 times`: for the advice evidence templates.
-- params: k (the count)
-- returns: VARCHAR
CREATE OR REPLACE MACRO times_of(k) AS k::VARCHAR || CASE WHEN k = 1 THEN ' time' ELSE ' times' END;

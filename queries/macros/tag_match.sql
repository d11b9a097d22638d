-- title: A run's tags match KEY=VALUE
-- what: tag is KEY=VALUE, split at the first '=' (k=a=b: key k, value a=b).
-- params: tags (runs.tags), tag (KEY=VALUE; NULL matches every run)
-- returns: BOOLEAN
CREATE OR REPLACE MACRO tag_match(tags, tag) AS
tag IS NULL OR tag_value(tags, substr(tag, 1, strpos(tag, '=') - 1)) = substr(tag, strpos(tag, '=') + 1);

-- title: An exception message on one line
-- what: Up to its first blank line or torch's Explanation / Hint / Developer debug context, whitespace collapsed ("backend='x' raised: RuntimeError: boom").
-- params: msg (the message)
-- returns: VARCHAR
CREATE OR REPLACE MACRO message_line(msg) AS
trim(regexp_replace(split_part(regexp_replace(regexp_replace(msg, '\r', '', 'g'),
     '\n[ \t]*(?:\n|(?:Explanation|Hint|Developer debug context):)', chr(10) || chr(10), 'g'),
     chr(10) || chr(10), 1), '\s+', ' ', 'g'));

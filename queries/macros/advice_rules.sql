-- title: The advice table as rows
-- what: src/pt2logs/query/advice.toml's rules, in file order (pt2logs.query.advice; docs/advice.md). The match columns document the rules; advice_items() matches with the CASE made from them (fill rule_case).
-- params: none
-- fills: advice_rule_rows
-- columns: rule_order, rule_id, finding, rule_facts (recompiles, graph_breaks, failures or cache_events), causes, guard_kinds, want_limit_hit, gb_ids, text_re, not_text_re, exc_types, min_events, min_values, subject_re, detail_re, subject_default, evidence_tpl, advice, cost (matched or frame)
CREATE OR REPLACE MACRO advice_rules() AS TABLE
SELECT * FROM (VALUES {{advice_rule_rows}})
  t(rule_order, rule_id, finding, rule_facts, causes, guard_kinds, want_limit_hit, gb_ids, text_re, not_text_re, exc_types, min_events, min_values, subject_re, detail_re, subject_default, evidence_tpl, advice, cost);

"""Advice: what to do about what a run's logs show, from the declarative table ``advice.toml``.

The table (one ``[[rule]]`` per finding: how it matches, the evidence to show, the advice, the cost
measure) is read once and fills two DuckDB macros (``queries/macros/advice_rules.sql`` and
``advice_items.sql``, :mod:`pt2logs.query.macros`) that every connection has, so the matching happens in
SQL, next to the data:

* ``advice_rules()``: the table's rules as rows;
* ``advice_items(run, since, until, tag)``: one row per item (a rule, a run, a frame or break site,
  a subject): the evidence filled in from the run's own recompiles, graph breaks, failures and cache
  lookups, the
  frames it applies to and the cost at stake (compile seconds, recompiles, breaks, failures).

A recompile, break or failure goes to the first rule (in file order) that matches it, so no fact
is counted under two findings. The named queries ``advice`` and ``dash_advice`` read the items;
``summary``, ``pt2logs advise`` and the weekly dashboard show them. docs/advice.md is generated from
the table (:func:`pt2logs.docgen.advice_markdown`).
"""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PATH = Path(__file__).with_name("advice.toml")
FACTS = ("recompiles", "graph_breaks", "failures", "cache_events", "cudagraph_skips")
COSTS = ("matched", "frame")
#: the columns of a fact the rules' conditions read (:func:`predicate`): facts alike in these are one kind
#: of fact to the rules, matched once (advice_items(): the distinct kinds, each fact joined to its kind's rule)
MATCH_COLUMNS = (
    "facts",
    "cause",
    "guard_kind",
    "limit_hit",
    "exc_type",
    "outcome",
    "gb_id",
    "text",
)
PLACEHOLDERS = (
    "subject",
    "values",
    "n",
    "times",
    "frame",
    "location",
    "code",
    "detail",
    "compile_ids",
    "limit",
    "compiles",
    "closest",
    "dynamic",
)
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
#: torch's recompile limit when the logs do not say (torch/_dynamo/config.py: recompile_limit = 8)
DEFAULT_LIMIT = 8


class AdviceError(ValueError):
    """The advice table is malformed (a test keeps the shipped one valid)."""


@dataclass(frozen=True)
class Rule:
    id: str
    finding: str
    facts: str
    evidence: str
    advice: str
    cost: str = "matched"
    causes: tuple[str, ...] | None = None
    guard_kinds: tuple[str, ...] | None = None
    limit_hit: bool | None = None
    gb_ids: tuple[str, ...] | None = None
    text: str | None = None
    not_text: str | None = None
    exc_types: tuple[str, ...] | None = None
    outcomes: tuple[str, ...] | None = None
    min_events: int = 1
    min_values: int = 0
    subject: str | None = None
    detail: str | None = None
    subject_default: str | None = None

    def matches_text(self) -> str:
        """How the rule matches, in words (for the docs)."""
        parts = [f"`{self.facts}`"]
        for name, vals in (
            ("cause", self.causes),
            ("guard_kind", self.guard_kinds),
            ("gb_id", self.gb_ids),
            ("exc_type", self.exc_types),
            ("outcome", self.outcomes),
        ):
            if vals:
                parts.append(f"{name} in {', '.join(f'`{v}`' for v in vals)}")
        if self.text:
            parts.append(("or " if self.gb_ids else "") + f"text matches {_code(self.text)}")
        if self.not_text:
            parts.append(f"text does not match {_code(self.not_text)}")
        if self.limit_hit is not None:
            parts.append(
                "recompile-limit refusals only"
                if self.limit_hit
                else "not a recompile-limit refusal"
            )
        if self.min_events > 1:
            parts.append(f"at least {self.min_events} on one rank per item")
        if self.min_values > 0:
            parts.append(f"at least {self.min_values} distinct values per item")
        return "; ".join(parts)


def _code(s: str) -> str:
    """A Markdown code span that may hold backticks."""
    return f"`` {s} ``" if "`" in s else f"`{s}`"


def _tuple(v: object, where: str) -> tuple[str, ...] | None:
    if v is None:
        return None
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise AdviceError(f"{where}: expected a list of strings")
    return tuple(v)


def parse_rules(text: str, where: str = "advice.toml") -> tuple[Rule, ...]:
    """The rules of an advice table, checked: known keys, facts and costs, regular expressions that
    compile, placeholders that exist, unique ids."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise AdviceError(f"{where}: {e}") from None
    rules: list[Rule] = []
    for i, r in enumerate(doc.get("rule", [])):
        at = f"{where} rule {i + 1} ({r.get('id', '?')})"
        unknown = set(r) - set(Rule.__dataclass_fields__)
        if unknown:
            raise AdviceError(f"{at}: unknown key(s) {', '.join(sorted(unknown))}")
        for k in ("id", "finding", "facts", "evidence", "advice"):
            if not isinstance(r.get(k), str) or not r[k].strip():
                raise AdviceError(f"{at}: needs {k!r}")
        if r["facts"] not in FACTS:
            raise AdviceError(f"{at}: facts must be one of {', '.join(FACTS)}")
        if r.get("cost", "matched") not in COSTS:
            raise AdviceError(f"{at}: cost must be one of {', '.join(COSTS)}")
        bad = [p for p in _PLACEHOLDER.findall(r["evidence"]) if p not in PLACEHOLDERS]
        if bad:
            raise AdviceError(f"{at}: unknown placeholder(s) {', '.join(bad)} in evidence")
        for k in ("text", "not_text", "subject", "detail"):
            if r.get(k) is not None:
                try:
                    re.compile(r[k])
                except re.error as e:
                    raise AdviceError(f"{at}: {k} is not a regular expression: {e}") from None
        args = dict(r)
        for k in ("causes", "guard_kinds", "gb_ids", "exc_types", "outcomes"):
            args[k] = _tuple(r.get(k), f"{at} {k}")
        rules.append(Rule(**args))
    ids = [r.id for r in rules]
    if len(set(ids)) != len(ids):
        raise AdviceError(f"{where}: rule ids repeat")
    return tuple(rules)


@functools.cache
def load_rules() -> tuple[Rule, ...]:
    """The package's advice table, read once per process."""
    return parse_rules(PATH.read_text(), PATH.name)


def _s(v: str | None) -> str:
    return "NULL::VARCHAR" if v is None else "'" + v.replace("'", "''") + "'"


def _l(v: tuple[str, ...] | None) -> str:
    return "NULL::VARCHAR[]" if v is None else "[" + ", ".join(_s(x) for x in v) + "]::VARCHAR[]"


def _b(v: bool | None) -> str:
    return "NULL::BOOLEAN" if v is None else ("true" if v else "false")


def rule_rows(rules: tuple[Rule, ...]) -> str:
    """The rules as SQL ``VALUES`` rows, in the order of ``advice_rules()``' columns (queries/macros/advice_rules.sql)."""
    rows = []
    for i, r in enumerate(rules):
        rows.append(
            "("
            + ", ".join(
                [
                    str(i),
                    _s(r.id),
                    _s(r.finding),
                    _s(r.facts),
                    _l(r.causes),
                    _l(r.guard_kinds),
                    _b(r.limit_hit),
                    _l(r.gb_ids),
                    _s(r.text),
                    _s(r.not_text),
                    _l(r.exc_types),
                    str(int(r.min_events)),
                    str(int(r.min_values)),
                    _s(r.subject),
                    _s(r.detail),
                    _s(r.subject_default),
                    _s(r.evidence),
                    _s(r.advice),
                    _s(r.cost),
                ]
            )
            + ")"
        )
    return ", ".join(rows)


def _in(col: str, vals: tuple[str, ...]) -> str:
    return f"{col} IN ({', '.join(_s(v) for v in vals)})"


def predicate(r: Rule, f: str = "f") -> str:
    """The SQL condition under which a fact (a row of the facts CTE, alias ``f``) matches rule ``r``."""
    cond = [f"{f}.facts = {_s(r.facts)}"]
    if r.causes:
        cond.append(_in(f"{f}.cause", r.causes))
    if r.guard_kinds:
        cond.append(_in(f"{f}.guard_kind", r.guard_kinds))
    if r.limit_hit is not None:
        cond.append(f"{'' if r.limit_hit else 'NOT '}coalesce({f}.limit_hit, false)")
    if r.exc_types:
        cond.append(_in(f"{f}.exc_type", r.exc_types))
    if r.outcomes:
        cond.append(_in(f"{f}.outcome", r.outcomes))
    either = ([_in(f"{f}.gb_id", r.gb_ids)] if r.gb_ids else []) + (
        [f"regexp_matches({f}.text, {_s(r.text)})"] if r.text else []
    )
    if either:
        cond.append("(" + " OR ".join(either) + ")")
    if r.not_text:
        cond.append(f"NOT regexp_matches({f}.text, {_s(r.not_text)})")
    return " AND ".join(cond)


def match_sql(rules: tuple[Rule, ...]) -> dict[str, str]:
    """The SQL expressions advice_items() is completed with (its fills, :data:`pt2logs.query.macros.FILLS`):
    ``RULE_CASE`` (the id of the first rule a fact matches, NULL for none), ``SUBJECT_CASE`` / ``DETAIL_CASE`` (a rule's ``subject`` / ``detail``
    expression applied to the fact's text), ``CACHE_FILTER`` (the cache lookups any rule can match),
    ``KIND_COLUMNS`` / ``KIND_JOIN`` (a kind of fact: its :data:`MATCH_COLUMNS`; a fact joined to its kind).
    Constant patterns: DuckDB compiles each once."""

    def extract(key: str) -> str:
        whens = [
            f"WHEN {_s(r.id)} THEN nullif(regexp_extract(m.text, {_s(getattr(r, key))}, 1), '')"
            for r in rules
            if getattr(r, key)
        ]
        return f"(CASE m.rule_id {' '.join(whens)} END)" if whens else "NULL::VARCHAR"

    rule_case = "(CASE " + " ".join(f"WHEN {predicate(r)} THEN {_s(r.id)}" for r in rules) + " END)"
    cache = [r for r in rules if r.facts == "cache_events"]
    outcomes = sorted({o for r in cache for o in r.outcomes or ()})
    # cache lookups are many and mostly hits and misses: only those some rule can match are read
    cache_filter = (
        "false"
        if not cache
        else "true"
        if any(not r.outcomes for r in cache)
        else _in("outcome", tuple(outcomes))
    )
    return {
        "RULE_CASE": rule_case if rules else "NULL::VARCHAR",
        "SUBJECT_CASE": extract("subject"),
        "DETAIL_CASE": extract("detail"),
        "CACHE_FILTER": cache_filter,
        "KIND_COLUMNS": ", ".join(MATCH_COLUMNS),
        "KIND_JOIN": " AND ".join(f"r.{c} IS NOT DISTINCT FROM f.{c}" for c in MATCH_COLUMNS),
    }

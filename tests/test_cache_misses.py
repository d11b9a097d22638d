"""Why a cache missed: cache lookups, their keys' components, and misses attributed across runs.

Real inputs only: tlparse's cache_hit_miss.log (torch 2.6 nightly, CUDA: FX misses and a hit, an
AOTAutograd bypass), its artifacts.log (torch 2.4: ``fx_graph_cache_hash``, components split into
lines), simple.log (``aotautograd_cache_hash``), and three torch 2.13 CPU runs made here
(tests/cache_runs.py: cold, warm with the cache folder kept, and a config change).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.conftest import fixture_path, shared_dir
from tests.rawscan import artifact_name, raw_records

import pt2logs
from pt2logs.analysis.cache_keys import component_kind, parse_components
from pt2logs.cli import main
from pt2logs.query.queries import run_named

_HEAD = re.compile(r"^\[(\w+)\] ([^:]+):")


def _artifacts(path, pattern):
    """(name, parsed JSON payload) of the artifacts whose name matches ``pattern`` (a regex, from the start)."""
    return [
        (artifact_name(env), json.loads(p))
        for env, p in raw_records(path)
        if re.match(pattern, artifact_name(env) or "")
    ]


# ---------------------------------------------------------------- the components, as torch writes them


def test_components_of_a_torch_26_fx_graph_key():
    (name, d), *_ = _artifacts(fixture_path("tlparse", "cache_hit_miss.log"), "fx_graph_cache_")
    comps = parse_components(d["components"])
    assert name == "fx_graph_cache_miss" and len(comps) == len(d["components"]) > 100
    assert [c.name for c in comps] == [_HEAD.match(x).group(2) for x in d["components"]]
    by = {c.name: c for c in comps}
    assert (
        by["gm"].kind == "graph" and "def forward(self" in by["gm"].value
    )  # a multi-line value kept whole
    assert (
        by["example_inputs[0]"].kind == "inputs"
        and "TensorMetadata(dtype=torch.float32" in by["example_inputs[0]"].value
    )
    assert (
        by["inductor_config[fx_graph_cache]"].kind == "config"
        and by["inductor_config[fx_graph_cache]"].value == "True"
    )
    assert by["torch_version"].kind == "torch_version"
    assert all(len(c.value) <= 1025 for c in comps)


def test_components_split_into_lines_by_torch_24_are_joined_back():
    (name, d), *_ = _artifacts(fixture_path("tlparse", "artifacts.log"), "fx_graph_cache_hash")
    comps = parse_components(d["components"])
    heads = [x for x in d["components"] if _HEAD.match(x)]
    assert len(comps) == len(heads) < len(d["components"])  # continuation lines are not components
    gm = comps[0]
    assert (
        gm.name == "gm"
        and "def forward(self, arg0_1, arg1_1):" in gm.value
        and "torch.ops.aten.mul.Tensor" in gm.value
    )


def test_kinds_of_the_aotautograd_components():
    (name, d), *_ = _artifacts(fixture_path("tlparse", "simple.log"), "aotautograd_cache_hash")
    comps = parse_components(d["components"])
    assert comps and {c.name for c in comps} >= {"aot_config", "grad_enabled"}
    assert component_kind("aot_config") == "config" and component_kind("grad_enabled") == "settings"
    assert (
        component_kind("system_info[device]") == "device"
        and component_kind("_custom_partitioner_fn") == "custom_passes"
    )
    assert parse_components(None) == [] and parse_components([1, "no head"]) == []


# ---------------------------------------------------------------- ingest: cache_events and components


@pytest.fixture(scope="module")
def tlparse_wh(tmp_path_factory):
    wh = str(tmp_path_factory.mktemp("cachewh") / "wh")
    for f in ("cache_hit_miss.log", "artifacts.log", "simple.log"):
        pt2logs.ingest([str(fixture_path("tlparse", f))], wh)
    return wh


def test_every_cache_artifact_is_a_lookup_with_its_components(tlparse_wh):
    con = pt2logs.connect(tlparse_wh)
    for f in ("cache_hit_miss.log", "artifacts.log", "simple.log"):
        raw = _artifacts(
            fixture_path("tlparse", f), r"(fx_graph|aotautograd)_cache_(hit|miss|bypass|hash)$"
        )
        rows = con.execute(
            """SELECT cache, outcome, key, n_components, reason, line_no FROM cache_events
                              WHERE run_id IN (SELECT run_id FROM runs WHERE name = ?) ORDER BY line_no""",
            [f],
        ).fetchall()
        assert len(rows) == len(raw) > 0, f
        for (name, d), (cache, outcome, key, n, reason, line) in zip(raw, rows):
            assert cache == name.split("_cache_")[0] and key == d.get("key")
            state = name.rsplit("_", 1)[1]
            assert outcome == (d.get("cache_state") if state == "hash" else state)
            assert n == len(parse_components(d.get("components")))
            comps = con.execute(
                "SELECT count(*), count(DISTINCT key) FROM cache_key_components c JOIN runs r USING (run_id) "
                "WHERE r.name = ? AND c.line_no = ?",
                [f, line],
            ).fetchone()
            assert comps[0] == n and comps[1] == (1 if n else 0)
            if d.get("cache_bypass_reason"):
                assert reason == d["cache_bypass_reason"]
    # torch 2.4 said no outcome: kept as NULL, not guessed
    assert con.execute(
        "SELECT outcome FROM cache_events e JOIN runs r USING (run_id) WHERE r.name = 'artifacts.log'"
    ).fetchall() == [(None,)]
    # cache_hit_miss.log compiles one frame three times (a test clearing the cache in between): one
    # FX lookup per compile, numbered within it
    fx = con.execute("""SELECT outcome, lookup FROM cache_lookups()
                        WHERE run = 'cache_hit_miss.log' AND cache = 'fx_graph' ORDER BY line_no""").fetchall()
    assert [o for o, _ in fx] == ["miss", "hit", "miss"] and {n for _, n in fx} == {1, 2, 3}


def test_bypasses_say_why(tlparse_wh):
    con = pt2logs.connect(tlparse_wh)
    rows = run_named(con, "cache_misses", {"run_id": "cache_hit_miss.log"}).to_pylist()
    bypass = [r for r in rows if r["outcome"] == "bypass"]
    assert len(bypass) == 3 and all(r["cache"] == "aotautograd" for r in bypass)
    assert all(
        r["why"].startswith("bypass: Unsupported call_function target flex_attention")
        for r in bypass
    )
    misses = [r for r in rows if r["outcome"] == "miss"]
    assert len(misses) == 2 and all(
        r["why"] == "no earlier run made this lookup: a cold start" for r in misses
    )


# ---------------------------------------------------------------- real torch 2.13 runs: cold, warm, config


@pytest.fixture(scope="module")
def torch_runs(tmp_path_factory):
    """The three runs made once per session (about a minute on two cores); PT2LOGS_CACHE_RUNS=DIR reuses
    the runs ``python tests/cache_runs.py DIR`` made."""
    import os
    from pathlib import Path

    from tests import cache_runs

    dest = (
        Path(os.environ["PT2LOGS_CACHE_RUNS"])
        if os.environ.get("PT2LOGS_CACHE_RUNS")
        else shared_dir("cache_runs", cache_runs.generate)  # tests/conftest.py BACKGROUND
    )
    wh = str(tmp_path_factory.mktemp("cache_runs_wh") / "wh")
    for run in cache_runs.RUNS:  # in order: each run's base is the one before it
        pt2logs.ingest([str(dest / run)], wh, tags={"job": "relu"})
    return wh


def test_cold_and_warm_runs(torch_runs):
    con = pt2logs.connect(torch_runs)
    rows = {r["run"]: r for r in run_named(con, "cache_cold_warm", {}).to_pylist()}
    assert (
        rows["cold"]["state"] == "cold"
        and rows["cold"]["hits"] == 0
        and rows["cold"]["lookups"] >= 3
    )
    assert (
        rows["warm"]["state"] == "warm"
        and rows["warm"]["hits"] == rows["warm"]["lookups"] == rows["cold"]["lookups"]
    )
    assert rows["warm"]["saved_s"] > 0 and rows["warm"]["cold_run"] == "cold"
    assert rows["warm"]["compile_s"] < rows["cold"]["compile_s"] and rows["warm"]["vs_cold_pct"] < 0
    assert rows["config"]["state"] == "cold" and rows["config"]["cold_run"] == "cold"


def test_cold_runs_are_paired_as_before_the_rewrite(torch_runs):
    """cache_cold_warm's cold run (candidates from the functions runs share) is the one the former
    quadratic join found (tests/query_oracles)."""
    from tests.query_oracles import named_sql, oracle_sql, rows

    con = pt2logs.connect(torch_runs)
    for params in ({}, {"run_id": "warm"}, {"tag": "job=relu"}, {"tag": "job=other"}):
        assert rows(con, named_sql("cache_cold_warm"), params) == rows(
            con, oracle_sql("cache_cold_warm"), params
        ), params


def _misses_as_before(wh: str, selections: list[dict]) -> list[dict]:
    """cache_misses and cache_key_diff (pairs made once, with their differences) give the rows their
    former formulation gives (tests/query_oracles: the pairs made twice)."""
    from tests.query_oracles import add_cache_oracle, named_sql, oracle_sql, rows

    con = pt2logs.connect(wh)
    add_cache_oracle(con)
    for params in selections:
        for name in ("cache_misses", "cache_key_diff"):
            p = {**params, "limit": 100000} if name == "cache_key_diff" else params
            assert rows(con, named_sql(name), p) == rows(con, oracle_sql(name), p), (name, params)
        misses = rows(
            con, named_sql("cache_misses"), params
        )  # one row per lookup: no pair is joined twice
        assert len({(r["run"], r["file"], r["line_no"]) for r in misses}) == len(misses), params
    return rows(con, named_sql("cache_key_diff"), {"limit": 100000})


def test_missed_lookups_are_explained_as_before_the_rewrite(torch_runs, tlparse_wh):
    diffs = _misses_as_before(
        torch_runs,
        [
            {},
            {"run_id": "config"},
            {"run_id": "cold", "base": "warm"},
            {"run_id": "config", "base": "cold"},
            {"tag": "job=relu"},
        ],
    )
    assert diffs  # the config run's keys differ in a component
    _misses_as_before(tlparse_wh, [{}])


#: a pair's differences in each shape the words must handle (by the pair's line): none (NULL), an empty
#: list, one component without a kind, more than six (some without a kind or a name), as logged
_SHAPES = """CASE (($off + line_no) % 5)
  WHEN 0 THEN NULL WHEN 1 THEN [] WHEN 2 THEN [{'component': 'x', 'kind': NULL, 'hash': 'h', 'base_hash': NULL, 'value': 'v', 'base_value': NULL}]
  WHEN 3 THEN list_concat(coalesce(diffs, []), list_transform(range(7), lambda i: {'component': CASE WHEN i = 3 THEN NULL ELSE 'c' || i END,
    'kind': CASE WHEN i = 2 THEN NULL ELSE 'k' || (i % 3) END, 'hash': 'h' || i, 'base_hash': NULL, 'value': 'v', 'base_value': NULL}))
  ELSE diffs END"""


def test_the_words_for_every_shape_of_differences_are_as_before(torch_runs):
    """cache_misses puts each pair's differences in words in the pair's own row (no join back onto the
    pairs), as the former words made per pair and joined back did (tests/query_oracles/cache_misses_pair_join.sql),
    for the real pairs with their differences made into every shape, mixed within a compile."""
    from tests.query_oracles import named_sql, oracle_sql, rows

    from pt2logs.query.macros import macro_sql

    con = pt2logs.connect(torch_runs)
    con.execute(
        macro_sql("cache_pair_diffs").replace(
            "MACRO cache_pair_diffs(", "MACRO cache_pair_diffs_real(", 1
        )
    )
    seen = []
    for off in range(5):
        con.execute(f"""CREATE OR REPLACE MACRO cache_pair_diffs(run, since, until, tag, base) AS TABLE
                        SELECT * REPLACE ({_SHAPES.replace("$off", str(off))} AS diffs)
                        FROM cache_pair_diffs_real(run, since, until, tag, base)""")
        for params in ({}, {"run_id": "config", "base": "cold"}):
            new = rows(con, named_sql("cache_misses"), params)
            # (the former query left the order of a compile's several differing kinds undefined)
            old = oracle_sql("cache_misses_pair_join").replace(
                "string_agg(DISTINCT d.differs, ', ')",
                "string_agg(DISTINCT d.differs, ', ' ORDER BY d.differs)",
            )
            assert new == rows(con, old, params), (off, params)
            seen += new
    assert any(" (+" in (r["components"] or "") for r in seen)  # more than six
    assert any(r["differs"] is None and r["components"] == "x" for r in seen)  # no kind
    assert any(r["why"].startswith("key differs in config, k0, k1, k2: c0, c1") for r in seen)
    assert any(
        "other keys differ in config, config, k0, k1, k2)" in r["why"] for r in seen
    )  # in order
    assert any(r["differs"] is None for r in seen)


def test_a_config_change_is_the_component_that_differs(torch_runs):
    con = pt2logs.connect(torch_runs)
    rows = run_named(con, "cache_misses", {}).to_pylist()
    assert not [r for r in rows if r["run"] == "warm"]  # every lookup hit
    cold = [r for r in rows if r["run"] == "cold"]
    assert cold and all(r["why"] == "no earlier run made this lookup: a cold start" for r in cold)
    config = [r for r in rows if r["run"] == "config"]
    assert len(config) == len(cold) and all(
        r["base_run"] == "warm" and r["base_outcome"] == "hit" for r in config
    )
    # paired by function, not by compile id: another function was compiled first in `config`
    assert {r["compile_id"] for r in cold} == {"0/0"} and {r["compile_id"] for r in config} == {
        "1/0"
    }
    fx = [r for r in config if r["cache"] == "fx_graph"]
    assert len(fx) == 2 and {r["lookup"] for r in fx} == {
        1,
        2,
    }  # forward and backward graph of one compile
    for r in fx:
        assert r["differs"] == "config" and r["components"] == "inductor_config[fallback_random]", r
        assert r["why"] == "key differs in config: inductor_config[fallback_random]"
    (aot,) = [r for r in config if r["cache"] == "aotautograd"]
    # torch 2.13 logs AOTAutograd's components only at DEBUG: the FX keys of the compile say what changed
    assert (
        aot["why"]
        == "key differs; torch logged no components for this cache (this compile's other keys differ in config)"
    )
    diff = run_named(con, "cache_key_diff", {"run_id": "config"}).to_pylist()
    assert [(r["component"], r["base_value"], r["value"]) for r in diff] == [
        ("inductor_config[fallback_random]", "False", "True")
    ] * 2


def test_same_key_means_the_entry_was_not_in_the_cache(torch_runs):
    # cold missed with the very keys warm then hit: compared with warm, its misses had nothing to do
    # with the key (the cache was empty)
    con = pt2logs.connect(torch_runs)
    rows = run_named(con, "cache_misses", {"run_id": "cold", "base": "warm"}).to_pylist()
    assert rows and all(r["key"] == r["base_key"] for r in rows)
    assert all(
        r["why"].startswith("same key as warm (hit): the entry was not in the cache") for r in rows
    )


def test_diff_shows_why_b_missed(torch_runs):
    res = CliRunner().invoke(main, ["diff", "warm", "config", "-w", torch_runs, "--wide"])
    assert res.exit_code == 0, res.output
    section = res.output.split("Why B's caches missed where A made the same lookup", 1)[1]
    assert section.count("key differs in config: inductor_config[fallback_random]") == 2
    res = CliRunner().invoke(main, ["diff", "cold", "warm", "-w", torch_runs])
    assert "Why B's caches missed" not in res.output  # warm missed nothing
    js = json.loads(
        CliRunner().invoke(main, ["diff", "warm", "config", "-w", torch_runs, "-f", "json"]).output
    )
    assert {r["cache"] for r in js["cache_misses"]} == {"fx_graph", "aotautograd"}


def test_the_stderr_says_the_same_lookups_as_the_trace(torch_runs):
    # the same runs' TORCH_LOGS text (FX graph cache at DEBUG, AOTAutograd at INFO): every lookup the
    # trace logged, with its key, outcome, number and, for the FX graph cache, its components
    con = pt2logs.connect(torch_runs)
    # (a hit loaded through an AOTAutograd entry logs no hash details in the text: its key is not
    # computed again; the trace's artifact carries the components stored with the entry)
    q = """SELECT r.name, e.compile_id, e.cache,
                  row_number() OVER (PARTITION BY e.run_id, e.source, e.rank, e.compile_id, e.cache ORDER BY e.line_no),
                  e.outcome, e.key,
                  CASE WHEN e.cache = 'fx_graph' AND e.outcome = 'miss' THEN e.n_components END
           FROM cache_events_all_sources e JOIN runs r USING (run_id) WHERE e.source = ? ORDER BY ALL"""
    trace, text = con.execute(q, ["trace"]).fetchall(), con.execute(q, ["torch_logs"]).fetchall()
    assert text == trace and len(trace) == 9  # 3 runs × (2 FX graphs + 1 AOTAutograd entry)
    q = """SELECT r.name, c.compile_id, c.cache, c.key, c.component, c.kind, c.hash, c.value
           FROM cache_key_components_all_sources c JOIN runs r USING (run_id) JOIN cache_events_all_sources e
             ON e.run_id = c.run_id AND e.file = c.file AND e.line_no = c.line_no
           WHERE c.source = ? AND e.outcome = 'miss' ORDER BY ALL"""
    text = con.execute(q, ["torch_logs"]).fetchall()
    assert len(text) > 1000 and text == con.execute(q, ["trace"]).fetchall()


def test_stderr_captures_alone_are_compared_too(tmp_path, torch_runs):
    # only the text: no compilation_metrics, so no function; lookups pair by compile id
    src = Path(
        pt2logs.connect(torch_runs)
        .execute("SELECT root FROM runs WHERE name = 'cold'")
        .fetchone()[0]
    ).parent
    wh = str(tmp_path / "wh")
    ids = {
        run: pt2logs.ingest([str(src / run / "torch_logs.txt")], wh).run_ids[0]
        for run in ("cold", "warm")
    }
    con = pt2logs.connect(wh)
    rows = run_named(con, "cache_misses", {"run_id": ids["cold"], "base": ids["warm"]}).to_pylist()
    assert len(rows) == 3 and all(
        r["function"] is None and r["base_outcome"] == "hit" for r in rows
    )
    assert all(
        r["why"].startswith("same key as torch_logs.txt (hit): the entry was not in the cache")
        for r in rows
    )


def test_a_base_lookup_is_found_by_an_asof_join_not_a_loop(torch_runs):
    """DuckDB turns an ASOF join whose left side it estimates under 64 rows into a nested loop join over
    every earlier lookup; 2.0.1 estimates the missed lookups at 41 rows on any warehouse, and
    cache_misses took 17 s at 10,000 runs. pt2logs' connections turn that rewrite off (views.SETTINGS)."""
    con = pt2logs.connect(torch_runs)
    plan = con.execute(
        "EXPLAIN SELECT count(*) FROM cache_pairs(NULL, NULL, NULL, NULL, NULL)"
    ).fetchall()[0][1]
    assert "ASOF" in plan.upper() and "NESTED_LOOP" not in plan.upper().replace(" ", "_")

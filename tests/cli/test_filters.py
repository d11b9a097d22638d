"""Run filters: --tag KEY=VALUE matches whatever the key and value hold; bad filters are usage errors."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from tests.conftest import fixture_path

import pt2logs
from pt2logs.cli import main


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def tagged_wh(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Two real runs: simple.log tagged k=a=b, a"b=1 and dir/x~y=2; comp_failure.log tagged k=a."""
    wh = str(tmp_path_factory.mktemp("tags") / "wh")
    r = cli(
        "ingest",
        str(fixture_path("tlparse", "simple.log")),
        "-w",
        wh,
        "--tag",
        "k=a=b",
        "--tag",
        'a"b=1',
        "--tag",
        "dir/x~y=2",
    )
    assert r.exit_code == 0, r.output
    r = cli("ingest", str(fixture_path("tlparse", "comp_failure.log")), "-w", wh, "--tag", "k=a")
    assert r.exit_code == 0, r.output
    return wh


def names(wh: str, *filters: str) -> list[str]:
    r = cli("query", "runs", "-w", wh, "-f", "json", *filters)
    assert r.exit_code == 0, r.output
    return sorted(x["name"] for x in json.loads(r.output))


def no_run_has(wh: str, *filters: str) -> str:
    """A tag no run has is a usage error naming the closest tags (issue 30), not an empty answer."""
    r = cli("query", "runs", "-w", wh, "-f", "json", *filters)
    assert r.exit_code == 2 and "no run has the tag" in r.output, r.output
    return r.output


def test_a_tag_value_may_hold_an_equals_sign(tagged_wh):
    assert (
        json.loads(
            pt2logs.connect(tagged_wh)
            .execute("SELECT tags FROM runs WHERE name = 'simple.log'")
            .fetchone()[0]
        )["k"]
        == "a=b"
    )
    assert names(tagged_wh, "--tag", "k=a=b") == ["simple.log"]
    assert names(tagged_wh, "--tag", "k=a") == ["comp_failure.log"]
    assert "closest: k=a=b, k=a" in no_run_has(tagged_wh, "--tag", "k=a=")


def test_a_tag_key_may_hold_quotes_and_path_characters(tagged_wh):
    assert names(tagged_wh, "--tag", 'a"b=1') == ["simple.log"]
    assert names(tagged_wh, "--tag", "dir/x~y=2") == ["simple.log"]
    no_run_has(tagged_wh, "--tag", "$.k=a")
    # the same macro, as a DuckDB user calls it
    con = pt2logs.connect(tagged_wh)
    assert (
        con.execute("""SELECT count(*) FROM selected_runs(NULL, NULL, NULL, 'a"b=1')""").fetchone()[
            0
        ]
        == 1
    )
    assert (
        con.execute(
            """SELECT tag_value(tags, 'a"b') FROM runs WHERE name = 'simple.log'"""
        ).fetchone()[0]
        == "1"
    )


def test_named_queries_filter_the_same_way(tagged_wh):
    for tag, run in (("k=a=b", "simple.log"), ("k=a", "comp_failure.log")):
        r = cli("query", "compile_time_by_phase", "-w", tagged_wh, "--tag", tag, "-f", "json")
        assert r.exit_code == 0, r.output
        assert {x["run"] for x in json.loads(r.output)} == {run}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tag", "model"], "'model' has no '=': expected KEY=VALUE, e.g. --tag model=llama"),
        (["--tag", "=x"], "'=x' has no KEY before '=': expected KEY=VALUE"),
        (["--since", "1d", "--until", "7d"], "--since 1d"),
        (["--until", "2026-10-01", "--since", "2026-11-01"], "is not before --until 2026-10-01"),
        (["--since", "yesterday"], "cannot read 'yesterday' as a time: use 7d, 12h, 2w or a date"),
    ],
)
@pytest.mark.parametrize("command", [["query", "runs"], ["dashboard"]])
def test_bad_filters_are_usage_errors(tagged_wh, tmp_path, command, args, message):
    out = ["-o", str(tmp_path / "dashboard.html")] if command == ["dashboard"] else []
    r = cli(*command, "-w", tagged_wh, *out, *args)
    assert r.exit_code == 2, r.output
    assert message in r.output and "Usage:" in r.output
    if "--until" in args:
        assert (
            "no run can match. --since is the older end: e.g. --since 14d --until 7d." in r.output
        )


@pytest.mark.parametrize("tag", ["model", "=x"])
def test_bad_tags_on_ingest_are_usage_errors(wh, tag):
    r = cli("ingest", str(fixture_path("tlparse", "simple.log")), "-w", wh, "--tag", tag)
    assert r.exit_code == 2 and "expected KEY=VALUE" in r.output


def test_split_by_a_tag_key_with_a_quote(tagged_wh):
    r = cli("query", "compile_time_trend", "-w", tagged_wh, "-p", "by", 'a"b', "-f", "json")
    assert r.exit_code == 0, r.output
    assert sorted(x["group"] for x in json.loads(r.output)) == ["(none)", "1"]

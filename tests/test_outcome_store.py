"""Outcomes kept per committed transaction (pt2logs.query.kept_rows / kept_cache, kind OUTCOMES): the kept rows are
what the rules decide at query time, row for row, on real runs (the samples, the GPU fixtures, a 2-rank
run whose stderr capture arrives in a later ingest); a run ingested again is decided again; a warehouse
without kept rows, or kept under other rules, answers the same by deciding at query time."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.conftest import SAMPLES, fixture_path
from tests.readers.test_outcome_lines import NCCL_HANG, TORCHRUN

import pt2logs
from pt2logs.cli import main
from pt2logs.query import kept_rows
from pt2logs.query.kept_rows import OUTCOMES
from pt2logs.query.queries import run_named
from pt2logs.store.warehouse import Warehouse

#: the kept rows and answers are what these tests are about (tests/conftest.py: the suite keeps none elsewhere)
pytestmark = pytest.mark.kept_rows

#: every named query that reads the outcome macros, with parameters that select the runs
QUERIES = {
    "run_outcomes": {},
    "rank_outcomes": {},
    "dash_run_rank_ends": {},
    "dash_run_outcomes": {"until": "2100-01-01"},
}


def _answers(wh: str, monkeypatch: pytest.MonkeyPatch, kept: bool) -> dict[str, list[dict]]:
    monkeypatch.setenv(kept_rows.ENV, "1" if kept else "0")
    con = pt2logs.connect(wh)
    out = {q: run_named(con, q, p).to_pylist() for q, p in QUERIES.items()}
    # `seq` numbers ranks by run name: the two runs named compile_failure tie, in either order
    out["dash_run_rank_ends"] = [{**r, "seq": None} for r in out["dash_run_rank_ends"]]
    out["_kept"] = con.sql("SELECT run_id, rank FROM _rank_outcomes_kept ORDER BY ALL").fetchall()
    # the weekly card over every run's week: the runs' start times are those the logs carry
    t = con.sql("SELECT max(started_at) + INTERVAL 1 DAY FROM runs").fetchall()[0][0]
    out["week"] = run_named(con, "dash_run_outcomes", {"until": t}).to_pylist()
    return out


def _same(wh: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[dict]]:
    """The answers read from the kept rows, after checking they equal those decided at query time."""
    kept, decided = _answers(wh, monkeypatch, True), _answers(wh, monkeypatch, False)
    monkeypatch.setenv(kept_rows.ENV, "1")  # (an ingest after this keeps outcomes again)
    assert decided.pop("_kept") == []
    for q in decided:
        # (rows in the same order, but for ties the query leaves open: two runs of one name in dash_run_rank_ends)
        assert sorted(map(repr, kept[q])) == sorted(map(repr, decided[q])), q
        assert len(kept[q]) == len(decided[q])
    return kept


@pytest.fixture(scope="module")
def real_wh(tmp_path_factory: pytest.TempPathFactory) -> str:
    base = tmp_path_factory.mktemp("kept")
    wh = str(base / "wh")
    pt2logs.ingest([str(SAMPLES)], wh)
    # the 2-rank sample with the stderr of a torchrun job whose rank 1 raised
    shutil.copytree(SAMPLES / "ddp_2rank" / "trace", base / "raised" / "trace")
    (base / "raised" / "stderr.txt").write_text(TORCHRUN)
    pt2logs.ingest([str(base / "raised")], wh)
    pt2logs.ingest(
        [str(fixture_path("gpu", "compile_failure")), str(fixture_path("gpu", "train_loop"))], wh
    )
    return wh


#: DuckDB's types as the kept columns' kinds
KINDS_OF = {"VARCHAR": "str", "INTEGER": "i32", "BIGINT": "i64", "DOUBLE": "f64", "BOOLEAN": "bool",
            "TIMESTAMP WITH TIME ZONE": "ts", "VARCHAR[]": "list<str>", "INTEGER[]": "list<i32>"}  # fmt: skip


@pytest.mark.parametrize("kind", kept_rows.KINDS, ids=lambda k: k.folder)
def test_the_kept_columns_are_the_macros(real_wh, kind):
    con = pt2logs.connect(real_wh)
    got = con.sql(f"DESCRIBE SELECT * FROM {kind.macro}(NULL, NULL, NULL, NULL)").fetchall()
    assert [(n, KINDS_OF[t]) for n, t, *_ in got] == [
        (c.name, c.kind) for c in kind.columns if c.name != "txn"
    ]


def rewrite_kept(wh: Path, kind: kept_rows.Kind, replace: str) -> None:
    """Every kept file of ``kind`` rewritten with ``replace`` (a ``REPLACE`` list): the queries then say whether
    they read the kept rows or asked the rules again."""
    con = pt2logs.connect(str(wh))
    for f in (wh / kind.folder / kept_rows.key(kind)).iterdir():
        con.execute(
            f"COPY (SELECT * REPLACE ({replace}) FROM read_parquet('{f}')) TO '{f}' (FORMAT parquet)"
        )


def test_every_ingested_run_is_kept_and_reads_what_the_rules_decide(real_wh, monkeypatch):
    got = _same(real_wh, monkeypatch)
    con = pt2logs.connect(real_wh)
    ranks = con.sql("SELECT count(*) FROM rank_outcomes(NULL, NULL, NULL, NULL)").fetchall()[0][0]
    # 7 runs (the copy of ddp_2rank with its stderr is that run again: same run id), 2 ranks in one
    assert len(got["_kept"]) == ranks == 8
    assert {r["outcome"] for r in got["run_outcomes"]} == {"failed", "unknown"}


def ingested_twice(tmp_path: Path, trace: Path, stderr: Any, same: Any) -> tuple[str, dict, dict]:
    """A run's trace ingested, then the run again once ``stderr(run folder)`` wrote its job's stderr (a new
    transaction): the warehouse and ``same(warehouse)`` after each ingest."""
    run = tmp_path / "job7"
    shutil.copytree(trace, run / "trace")
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(run)], wh)
    before = same(wh)
    stderr(run)
    pt2logs.ingest([str(run)], wh)
    return wh, before, same(wh)


def check_ingested_again_is_kept_again(tmp_path: Path, kind: Any, same: Any) -> None:
    """A kind of rows kept per commit (kept_rows.KINDS) after the recompiles run is ingested again with its job's
    stderr (a new transaction): the same runs kept, one file per transaction, the rows read the new one's."""
    wh, before, after = ingested_twice(
        tmp_path,
        SAMPLES / "recompiles" / "trace",
        lambda run: shutil.copy(
            SAMPLES / "recompiles" / "torch_logs.txt.gz", run / "stderr.txt.gz"
        ),
        same,
    )
    assert [r for r, _ in after["_kept"]] == [r for r, _ in before["_kept"]]
    assert len(kept_rows.kept_txns(kind, Warehouse(wh))) == 2  # one file per transaction
    con = pt2logs.connect(wh)
    # the rows read are the new transaction's
    assert (
        con.sql(f"SELECT DISTINCT txn FROM {kind.view}").fetchall()
        == con.sql("SELECT txn FROM _live").fetchall()
    )


def test_a_stderr_ingested_later_decides_the_run_again(tmp_path, monkeypatch):
    def hang(run: Path) -> None:  # both ranks' NCCL watchdog timed out
        with gzip.open(run / "stderr.txt.gz", "wt") as f:
            f.write(NCCL_HANG)

    wh, before, after = ingested_twice(
        tmp_path, SAMPLES / "ddp_2rank" / "trace", hang, lambda w: _same(w, monkeypatch)
    )
    (row,) = before["run_outcomes"]
    assert row["outcome"] != "hung"
    (row2,) = after["run_outcomes"]
    assert row2["run_id"] == row["run_id"]
    assert row2["outcome"] == "hung" and "timed out in BROADCAST" in row2["why"]
    assert len(after["_kept"]) == 2  # the new transaction's rows; the old ones are not live
    kept = kept_rows.kept_txns(OUTCOMES, Warehouse(wh))
    assert len(kept) == 2  # one file per transaction


def test_a_warehouse_without_kept_outcomes_answers_the_same(real_wh, tmp_path, monkeypatch):
    wh = tmp_path / "old"
    shutil.copytree(real_wh, wh)
    kept = _answers(str(wh), monkeypatch, True)
    shutil.rmtree(wh / OUTCOMES.folder)  # written before outcomes were kept
    old = _answers(str(wh), monkeypatch, True)
    assert old.pop("_kept") == [] and kept.pop("_kept")
    assert {q: sorted(map(repr, v)) for q, v in old.items()} == {
        q: sorted(map(repr, v)) for q, v in kept.items()
    }
    # rows kept under other rules (another key) are never read
    (wh / OUTCOMES.folder / "0123456789abcdef").mkdir(parents=True)
    src = Path(real_wh) / OUTCOMES.folder / kept_rows.key(OUTCOMES)
    for f in src.iterdir():
        shutil.copy(f, wh / OUTCOMES.folder / "0123456789abcdef" / f.name)
    assert _answers(str(wh), monkeypatch, True)["_kept"] == []
    # compact keeps them
    r = CliRunner().invoke(main, ["compact", "-w", str(wh), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["outcomes_kept_runs"] == 7
    again = _answers(str(wh), monkeypatch, True)
    assert len(again.pop("_kept")) == 8
    assert {q: sorted(map(repr, v)) for q, v in again.items()} == {
        q: sorted(map(repr, v)) for q, v in kept.items()
    }


def test_kept_runs_are_read_not_decided_again(real_wh, tmp_path, monkeypatch):
    """The queries read a kept run's rows as they are (here made to say so) and decide the others: every
    outcome query, the weekly card included (it once called the macro with its week's bounds as a column of
    another table: DuckDB then joins laterally and decides every run again, 11.5 CPU s at 10,000 runs)."""
    wh = tmp_path / "wh"
    shutil.copytree(real_wh, wh)
    rewrite_kept(
        wh,
        OUTCOMES,
        "CASE WHEN run = 'raised' THEN 'hung' ELSE outcome END AS outcome, 'kept: ' || why AS why",
    )
    got = _answers(str(wh), monkeypatch, True)
    assert all(r["why"].startswith("kept: ") for r in got["rank_outcomes"])
    assert {r["run"]: r["outcome"] for r in got["run_outcomes"]}["raised"] == "hung"
    (week,) = got["week"]
    assert week["hung"] == 1 and "raised (hung)" in week["examples"]

"""A damaged kept rows file of either kind (``_outcomes/<key>/<txn>.pq``, ``_advice/<key>/<txn>.pq``:
pt2logs.query.kept_rows) is not read: the queries answer what the rules decide at query time, the connection warns
naming the file, and the next ingest or compact writes it anew (issue 31: bad input gets a clear error and loses
nothing). Before, any damage made every query of the warehouse fail (a kept advice file: every advice query, until
both kinds shared one mechanism). Locally and on a real local S3 (moto's server)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.conftest import SAMPLES
from tests.s3server import moto_s3

import pt2logs
from pt2logs.cli import main
from pt2logs.query import kept_rows
from pt2logs.query.queries import run_named
from pt2logs.query.views import read_warnings
from pt2logs.store.warehouse import Warehouse

#: the kept rows and answers are what these tests are about (tests/conftest.py: the suite keeps none elsewhere)
pytestmark = pytest.mark.kept_rows

#: the named queries that read each kind's rows (the first: the one the CLI is asked), with their parameters
QUERIES = {
    kept_rows.OUTCOMES: {"run_outcomes": {}, "rank_outcomes": {}},
    kept_rows.ADVICE: {"advice": {"limit": 1000}},
    kept_rows.FACTS: {
        "dash_compile_time_trend": {},
        "dash_week_over_week": {"until": "2026-12-01"},
    },
}
KINDS = {k.folder: k for k in kept_rows.KINDS}


def _flip(b: bytes, start: int, end: int) -> bytes:
    return b[:start] + bytes(x ^ 0x5A for x in b[start:end]) + b[end:]


#: damage -> the kept file's bytes made of the whole file's
DAMAGE = {
    "zero bytes": lambda b: b"",
    "cut short": lambda b: b[: len(b) // 2],
    "garbage": lambda b: os.urandom(len(b)),
    "footer overwritten": lambda b: _flip(b, len(b) - 400, len(b) - 8),
    # the ends and the footer whole, the first column's pages not: found when a query reads it
    "pages overwritten": lambda b: _flip(b, 4, 300),
}


@pytest.fixture(scope="module")
def kept_wh(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    wh = tmp_path_factory.mktemp("damage") / "wh"
    pt2logs.ingest([str(SAMPLES / "compile_failure"), str(SAMPLES / "ddp_2rank")], str(wh))
    return wh, _answers(str(wh))


def _answers(wh: str) -> dict:
    con = pt2logs.connect(wh)
    out = {
        q: sorted(map(repr, run_named(con, q, p).to_pylist()))
        for qs in QUERIES.values()
        for q, p in qs.items()
    }
    items = "SELECT * EXCLUDE (ranks), list_sort(ranks) FROM advice_items(NULL, NULL, NULL, NULL)"
    out["items"] = sorted(map(repr, con.sql(items).fetchall()))
    out["warnings"] = read_warnings(con)
    return out


def _kept(wh: Path, kind: kept_rows.Kind) -> Path:
    (f,) = (wh / kind.folder / kept_rows.key(kind)).iterdir()
    return f


@pytest.mark.parametrize("damage", list(DAMAGE))
@pytest.mark.parametrize("folder", list(KINDS))
def test_a_damaged_kept_file_is_decided_anew_and_written_again(kept_wh, tmp_path, folder, damage):
    kind = KINDS[folder]
    src, whole = kept_wh
    whole = dict(whole)
    assert whole.pop("warnings") == [] and len(whole["rank_outcomes"]) == 3
    assert whole["items"]  # (the backend failure's item: the kept advice has rows to lose)
    wh = tmp_path / "wh"
    shutil.copytree(src, wh)
    f = _kept(wh, kind)
    good = f.read_bytes()
    f.write_bytes(DAMAGE[damage](good))
    # the CLI answers, and says on stderr which file it did not read (damaged pages: once the query found them)
    r = CliRunner().invoke(main, ["query", next(iter(QUERIES[kind])), "-w", str(wh), "-f", "csv"])
    assert r.exit_code == 0, r.output
    assert r.output.count(f"{f.name} (kept {kind.what}) is ") == 1 and r.output.count("\n") >= 2
    got = _answers(str(wh))
    warned = got.pop("warnings")
    assert got == whole  # decided at query time: the same answers
    (w,) = warned
    assert f.name in w and f"kept {kind.what}" in w and "decided at query time" in w
    # the next writable command writes it anew: an ingest of other runs (ends damaged), a compaction (any)
    if damage != "pages overwritten":
        pt2logs.ingest([str(SAMPLES / "train_step")], str(wh))
    else:
        r = CliRunner().invoke(main, ["compact", "-w", str(wh)])
        assert r.exit_code == 0, r.output
    kept = kept_rows.kept_txns(kind, Warehouse(str(wh)))
    assert {p.stem for p in (wh / kind.folder / kept_rows.key(kind)).iterdir()} == kept  # all read
    con = pt2logs.connect(str(wh))
    assert read_warnings(con) == []
    assert kept == {t for (t,) in con.sql("SELECT DISTINCT txn FROM _live").fetchall()}
    # every live commit kept: the macro reads the kept rows alone, and they are its answers
    n = con.sql(f"SELECT count(*) FROM {kind.view} WHERE {kind.answers}").fetchall()[0][0]
    assert (
        n == con.sql(f"SELECT count(*) FROM {kind.macro}(NULL, NULL, NULL, NULL)").fetchall()[0][0]
    )


@pytest.fixture(scope="module")
def s3_kept():
    """One moto server for the module's S3 cases, the runs ingested once into its bucket ``kept-src``, and
    that warehouse's answers: each case copies it into a bucket of its own (copies made by the server: the
    same bytes, the same ETags the commit records hold) instead of starting a server and ingesting again."""
    with moto_s3() as fs:
        fs.mkdir("kept-src")
        pt2logs.ingest([str(SAMPLES / "compile_failure")], "s3://kept-src/wh/")
        yield fs, _answers("s3://kept-src/wh/")


@pytest.mark.parametrize("folder", list(KINDS))
def test_a_damaged_kept_file_on_s3_is_decided_anew(s3_kept, folder):
    kind = KINDS[folder]
    fs, whole = s3_kept
    whole = dict(whole)
    bucket = "kept" + kind.folder.replace("_", "-")  # (s3fs remembers the buckets it made)
    fs.mkdir(bucket)
    fs.copy("kept-src/wh", f"{bucket}/wh", recursive=True)
    wh = f"s3://{bucket}/wh/"
    assert sorted(p.split("/", 1)[1] for p in fs.find(f"{bucket}/wh")) == sorted(
        p.split("/", 1)[1] for p in fs.find("kept-src/wh")
    )
    assert whole.pop("warnings") == []
    (path,) = fs.ls(f"{bucket}/wh/{kind.folder}/{kept_rows.key(kind)}")
    good = fs.cat_file(path)
    for damage in ("cut short", "garbage", "pages overwritten"):
        fs.pipe_file(path, DAMAGE[damage](good))
        fs.invalidate_cache()
        got = _answers(wh)
        warned = got.pop("warnings")
        assert got == whole, damage
        if damage != "pages overwritten":
            assert len(warned) == 1 and path.rsplit("/", 1)[-1] in warned[0], damage
    r = CliRunner().invoke(main, ["compact", "-w", wh])
    assert r.exit_code == 0, r.output
    fs.invalidate_cache()
    assert len(kept_rows.kept_txns(kind, Warehouse(wh))) == 1
    assert _answers(wh)["warnings"] == []

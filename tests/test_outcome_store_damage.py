"""A damaged kept outcomes file (``_outcomes/<key>/<txn>.pq``, pt2logs.query.outcome_store) is not read: the
queries answer what the rules decide at query time, the connection warns naming the file, and the next ingest
or compact writes it anew (issue 31: bad input gets a clear error and loses nothing). Before, any damage made
every query of the warehouse fail. Locally and on a real local S3 (moto's server)."""

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
from pt2logs.query.kept_rows import OUTCOMES
from pt2logs.query.queries import run_named
from pt2logs.query.views import read_warnings
from pt2logs.store.warehouse import Warehouse


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
    out = {q: run_named(con, q).to_pylist() for q in ("run_outcomes", "rank_outcomes")}
    out["warnings"] = read_warnings(con)
    return out


def _kept(wh: Path) -> Path:
    (f,) = (wh / OUTCOMES.folder / kept_rows.key(OUTCOMES)).iterdir()
    return f


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_kept_file_is_decided_anew_and_written_again(kept_wh, tmp_path, damage):
    src, whole = kept_wh
    assert whole.pop("warnings", []) == [] and len(whole["rank_outcomes"]) == 3
    wh = tmp_path / "wh"
    shutil.copytree(src, wh)
    f = _kept(wh)
    good = f.read_bytes()
    f.write_bytes(DAMAGE[damage](good))
    # the CLI answers, and says on stderr which file it did not read (damaged pages: once the query found them)
    r = CliRunner().invoke(main, ["query", "run_outcomes", "-w", str(wh), "-f", "csv"])
    assert r.exit_code == 0, r.output
    assert r.output.count(f"{f.name} (kept outcomes) is ") == 1 and r.output.count("\n") >= 4
    got = _answers(str(wh))
    warned = got.pop("warnings")
    assert got == whole  # decided at query time: the same answers
    (w,) = warned
    assert f.name in w and "kept outcomes" in w and "decided at query time" in w
    # the next writable command writes it anew: an ingest of other runs (ends damaged), a compaction (any)
    if damage != "pages overwritten":
        pt2logs.ingest([str(SAMPLES / "train_step")], str(wh))
    else:
        r = CliRunner().invoke(main, ["compact", "-w", str(wh)])
        assert r.exit_code == 0, r.output
    kept = kept_rows.kept_txns(OUTCOMES, Warehouse(str(wh)))
    folder = wh / OUTCOMES.folder / kept_rows.key(OUTCOMES)
    assert {p.stem for p in folder.iterdir()} == kept  # every file reads
    con = pt2logs.connect(str(wh))
    assert read_warnings(con) == []
    n = con.sql("SELECT count(*) FROM _rank_outcomes_kept").fetchall()[0][0]
    assert (
        n == con.sql("SELECT count(*) FROM rank_outcomes(NULL, NULL, NULL, NULL)").fetchall()[0][0]
    )


def test_a_damaged_kept_file_on_s3_is_decided_anew():
    with moto_s3() as fs:
        fs.mkdir("kept")
        wh = "s3://kept/wh/"
        pt2logs.ingest([str(SAMPLES / "compile_failure")], wh)
        whole = _answers(wh)
        assert whole.pop("warnings") == []
        (path,) = fs.ls(f"kept/wh/{OUTCOMES.folder}/{kept_rows.key(OUTCOMES)}")
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
        assert len(kept_rows.kept_txns(OUTCOMES, Warehouse(wh))) == 1
        assert _answers(wh)["warnings"] == []

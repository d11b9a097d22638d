"""``pt2logs check`` finds what is damaged and which runs it held; ``pt2logs repair`` quarantines it and
ingests those runs again from their sources (or records the loss); ``compact`` never rewrites a
partition with a damaged member (docs/warehouse.md, "Damage")."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.conftest import SAMPLES, scalar

import pt2logs
from pt2logs.cli import main
from pt2logs.store.compact import compact

GB = "SELECT count(*) FROM graph_breaks"


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """Two transactions (graph_breaks, then recompiles + ddp_2rank) of copies of the samples: a source can be removed."""
    root = tmp_path_factory.mktemp("repair")
    src = root / "src"
    for n in ("graph_breaks", "recompiles", "ddp_2rank"):
        shutil.copytree(SAMPLES / n, src / n)
    wh = root / "wh"
    pt2logs.ingest([str(src / "graph_breaks")], str(wh))
    pt2logs.ingest([str(src / "recompiles"), str(src / "ddp_2rank")], str(wh))
    return root


def _copy(base: Path, tmp_path: Path) -> tuple[Path, Path]:
    shutil.copytree(base, tmp_path / "c")
    # the files rows name the original sources: repair reads those (a test that removes one copies first)
    return tmp_path / "c" / "wh", base / "src"


def _flip(f: Path) -> None:
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0xFF
    f.write_bytes(bytes(data))


def _cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.output


def _count(wh: Path, sql: str = GB) -> int:
    return scalar(wh, sql)


def test_check_finds_a_bit_flip_reads_cannot_see_and_repair_restores_the_runs(base, tmp_path):
    wh, _ = _copy(base, tmp_path)
    assert _cli("check", "-w", str(wh))[0] == 0
    victim = sorted(wh.glob("events/*/*.parquet"))[0]
    _flip(victim)  # same size: reads do not notice; check hashes
    rc, out = _cli("check", "-w", str(wh))
    assert rc == 1 and victim.name in out and "content changed" in out
    assert _cli("check", "--quick", "-w", str(wh))[0] == 0
    rc, out = _cli("repair", "-w", str(wh))
    assert (
        rc == 0
        and f"quarantined: events/{victim.parent.name}/{victim.name}" in out
        and "ingested again" in out
    )
    assert (wh / "_quarantine" / "events" / victim.parent.name / victim.name).exists()
    rc, out = _cli("check", "-w", str(wh))
    assert rc == 0, out
    assert _count(wh, "SELECT count(*) FROM events") == _count(
        base / "wh", "SELECT count(*) FROM events"
    )
    con = pt2logs.connect(str(wh))
    assert pt2logs.query.views.read_warnings(con) == []
    con.close()


def test_repair_quarantines_a_damaged_commit_and_reingests_its_runs(base, tmp_path):
    wh, _ = _copy(base, tmp_path)
    runs = sorted(wh.glob("runs/*/*.parquet"))[-1]  # the second transaction: recompiles + ddp_2rank
    runs.write_bytes(runs.read_bytes()[:100])
    rc, out = _cli("summary", "-w", str(wh))
    assert rc == 1 and runs.name in out and "pt2logs repair" in out
    rc, out = _cli("check", "-w", str(wh))
    assert rc == 1 and "the runs file (the commit) cannot be read" in out
    rc, out = _cli("repair", "-w", str(wh))
    assert rc == 0, out
    assert out.count("ingested again") == 2
    assert _count(wh) == 14 and _count(wh, "SELECT count(*) FROM runs") == 3
    assert _cli("check", "-w", str(wh))[0] == 0


def test_repair_records_a_loss_when_the_sources_are_gone(base, tmp_path):
    wh, _ = _copy(base, tmp_path)
    src = tmp_path / "moved"
    shutil.copytree(base / "src" / "graph_breaks", src)
    pt2logs.ingest([str(src)], str(wh), run_id="gone-run")
    shutil.rmtree(src)
    con = pt2logs.connect(str(wh))
    txn = con.execute("SELECT txn FROM runs WHERE run_id = 'gone-run'").fetchone()[0]
    con.close()
    victim = next(f for f in wh.glob("graph_breaks/*/*.parquet") if txn in f.name)
    victim.unlink()
    rc, out = _cli("repair", "-w", str(wh))
    assert rc == 0 and "not restored: gone-run: source" in out
    rc, out = _cli("check", "-w", str(wh))
    assert rc == 0 and "quarantined by repair" in out
    res = CliRunner().invoke(main, ["query", GB, "-w", str(wh), "--format", "csv"])
    assert "gone-run" in res.stderr and "quarantined" in res.stderr  # the loss stays named


def test_compact_never_rewrites_a_partition_with_a_damaged_member(base, tmp_path):
    wh, _ = _copy(base, tmp_path)
    before = sorted(p.name for p in wh.rglob("*.parquet"))
    victim = sorted(wh.glob("graph_breaks/*/*.parquet"))[0]
    victim.write_bytes(victim.read_bytes()[:50])
    res = compact(str(wh), grace_s=0)
    assert res.partitions == [] and res.skipped and victim.name in res.skipped[0][1]
    assert (
        sorted(p.name for p in wh.rglob("*.parquet")) == before
    )  # nothing rewritten, nothing deleted
    rc, out = _cli("repair", "-w", str(wh))
    assert rc == 0, out
    res = compact(str(wh), grace_s=0)
    assert res.partitions and not res.skipped
    assert _count(wh) == 14
    assert _cli("check", "-w", str(wh))[0] == 0

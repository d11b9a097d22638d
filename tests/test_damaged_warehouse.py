"""One damaged warehouse file: reads leave it out with a warning naming it and its runs, a re-ingest
restores the runs, stray files and folders are never read, an old-schema file changes no answer,
a damaged commit or _meta.json is a clear error (docs/warehouse.md, "Damage")."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from tests.conftest import SAMPLES, scalar

import pt2logs
from pt2logs.cli import main
from pt2logs.query.views import damaged_runs, read_warnings
from pt2logs.store.manifest import KEY
from pt2logs.store.warehouse import WarehouseError

GB = "SELECT count(*) FROM graph_breaks"


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """Two transactions: the graph_breaks sample (7 breaks, trace + stderr sources), then the others."""
    root = tmp_path_factory.mktemp("damage")
    wh = root / "wh"
    pt2logs.ingest([str(SAMPLES / "graph_breaks")], str(wh))
    pt2logs.ingest([str(SAMPLES / n) for n in ("recompiles", "ddp_2rank")], str(wh))
    return wh


def _copy(base: Path, tmp_path: Path) -> Path:
    wh = tmp_path / "wh"
    shutil.copytree(base, wh)
    return wh


def _count(wh: Path, sql: str = GB) -> int:
    return scalar(wh, sql)


def _gb_file_of(wh: Path, run_name: str) -> Path:
    """The graph_breaks file holding ``run_name``'s rows."""
    for f in sorted(wh.glob("graph_breaks/*/*.parquet")):
        t = pq.read_table(f, columns=["run_id"])
        con = pt2logs.connect(str(wh))
        ids = {
            r
            for (r,) in con.execute("SELECT run_id FROM runs WHERE name = ?", [run_name]).fetchall()
        }
        con.close()
        if ids & set(t.column(0).to_pylist()):
            return f
    raise AssertionError(run_name)


@pytest.mark.parametrize("damage", ["truncate", "empty", "delete"])
def test_a_damaged_data_file_is_left_out_with_a_warning_and_reingest_restores_it(
    base, tmp_path, damage
):
    wh = _copy(base, tmp_path)
    assert _count(wh) == 14  # 7 + ddp_2rank's 7
    f = _gb_file_of(wh, "graph_breaks")
    if damage == "truncate":
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    elif damage == "empty":
        f.write_bytes(b"")
    else:
        f.unlink()
    con = pt2logs.connect(str(wh))
    warns = read_warnings(con)
    gone = {
        r for (r,) in con.execute("SELECT run_id FROM runs WHERE name = 'graph_breaks'").fetchall()
    }
    assert con.execute(GB).fetchone()[0] == 7  # the other transaction's rows; no DuckDB error
    assert damaged_runs(con) == gone
    con.close()
    assert len(warns) == 1 and f.name in warns[0] and next(iter(gone)) in warns[0]
    # every command still answers, and says what it left out (stderr)
    res = CliRunner().invoke(main, ["summary", "graph_breaks", "-w", str(wh)])
    assert res.exit_code == 0, res.output
    assert f.name in res.stderr and "pt2logs repair" in res.stderr
    res = CliRunner().invoke(
        main, ["query", "SELECT count(*) AS n FROM recompiles", "-w", str(wh), "--format", "csv"]
    )
    assert res.exit_code == 0, res.output
    # re-ingest notices the run's rows are gone: it is read again (not "unchanged"), and the warning goes
    out = pt2logs.ingest([str(SAMPLES / "graph_breaks")], str(wh))
    assert out.runs_updated == 1 and out.runs_unchanged == 0
    con = pt2logs.connect(str(wh))
    assert con.execute(GB).fetchone()[0] == 14 and read_warnings(con) == []
    con.close()


@pytest.mark.parametrize("damage", ["delete", "truncate"])
def test_a_damaged_payload_file_is_named_and_reingest_restores_the_payloads(base, tmp_path, damage):
    wh = _copy(base, tmp_path)
    sql = "SELECT count(*) FROM events WHERE payload IS NOT NULL"
    full = _count(wh, sql)
    victim = sorted(wh.glob("payloads/*/*.parquet"))[0]
    if damage == "delete":
        victim.unlink()
    else:
        victim.write_bytes(victim.read_bytes()[:1000])
    con = pt2logs.connect(str(wh))
    assert any(victim.name in w for w in read_warnings(con))
    con.close()
    pt2logs.ingest([str(SAMPLES / n) for n in ("graph_breaks", "recompiles", "ddp_2rank")], str(wh))
    assert _count(wh, sql) == full


@pytest.mark.views_file
def test_stray_files_and_folders_are_never_read(base, tmp_path):
    wh = _copy(base, tmp_path)
    part = sorted(wh.glob("graph_breaks/*/*.parquet"))[0]
    (part.parent / "zz_backup.parquet").write_bytes(
        b"not parquet"
    )  # a stray file sorting after every part
    shutil.copy(part, part.parent.parent / "zz_copy.parquet")  # a valid one outside the partitions
    (wh / "events" / "backup").mkdir()
    shutil.copy(
        sorted(wh.glob("events/*/*.parquet"))[0], wh / "events" / "backup"
    )  # a stray folder
    con = pt2logs.connect(str(wh))
    assert con.execute(GB).fetchone()[0] == 14
    assert con.execute("SELECT count(*) FROM events").fetchone()[0] == _count(
        base, "SELECT count(*) FROM events"
    )
    assert read_warnings(con) == []
    con.close()
    assert pt2logs.ingest([str(SAMPLES / "graph_breaks")], str(wh)).runs_unchanged == 1
    # nor by the views file for other tools (its globs name only where writers put files)
    import duckdb

    from pt2logs.ingestion.views_file import ViewsFile
    from pt2logs.store.warehouse import Warehouse

    (wh / "_views.json").unlink(missing_ok=True)
    ViewsFile(Warehouse(str(wh))).write()
    dcon = duckdb.connect(str(wh / "pt2logs.duckdb"), read_only=True)
    assert dcon.execute(GB).fetchone()[0] == 14
    assert dcon.execute("SELECT count(*) FROM events").fetchone()[0] == _count(
        base, "SELECT count(*) FROM events"
    )
    dcon.close()


@pytest.mark.views_file
def test_a_file_of_an_older_schema_changes_no_answer(base, tmp_path):
    """A newer transaction written by an older pt2logs (no commit record, graph_breaks without
    ``source`` / ``break_key``) must not double the runs that have two sources, nor drop their keys."""
    wh = _copy(base, tmp_path)
    keys = _count(
        wh,
        "SELECT count(break_key) FROM graph_breaks g JOIN runs r USING (run_id) WHERE r.name = 'graph_breaks'",
    )
    assert keys == 7
    old = tmp_path / "old"
    pt2logs.ingest([str(SAMPLES / "graph_breaks")], str(old), run_id="old-host-run")
    for f in old.glob("graph_breaks/*/*.parquet"):
        t = pq.read_table(f)
        pq.write_table(t.drop_columns(["source", "break_key"]), f)
    for f in old.glob("runs/*/*.parquet"):
        t = pq.read_table(f)
        meta = {k: v for k, v in (t.schema.metadata or {}).items() if k != KEY}
        pq.write_table(t.replace_schema_metadata(meta), f)
    for f in old.rglob("*.parquet"):
        dest = wh / f.relative_to(old)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, dest)
    assert any(old.glob("graph_breaks/*/*.parquet"))
    con = pt2logs.connect(str(wh))
    q = "SELECT count(*), count(break_key) FROM graph_breaks g JOIN runs r USING (run_id) WHERE r.name = 'graph_breaks' AND run_id <> 'old-host-run'"
    assert con.execute(q).fetchone() == (7, 7)
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 4
    con.close()
    # the views file for other tools (globs, not commit records) takes the union of the files' columns too
    import duckdb

    from pt2logs.ingestion.views_file import ViewsFile
    from pt2logs.store.warehouse import Warehouse

    (wh / "_views.json").unlink(missing_ok=True)
    ViewsFile(Warehouse(str(wh))).write()
    dcon = duckdb.connect(str(wh / "pt2logs.duckdb"), read_only=True)
    assert dcon.execute(q).fetchone() == (7, 7)
    dcon.close()


@pytest.mark.parametrize("damage", ["bitflip", "record", "truncate"])
def test_a_damaged_commit_or_meta_file_is_a_clear_error(base, tmp_path, damage):
    wh = _copy(base, tmp_path)
    runs = sorted(wh.glob("runs/*/*.parquet"))[0]
    data = bytearray(runs.read_bytes())
    if damage == "bitflip":  # the footer's first field header: thrift's "don't know what type"
        data[len(data) - 8 - int.from_bytes(data[-8:-4], "little")] ^= 0xFF
    elif damage == "record":
        data[data.index(b'{"v":') + 1] ^= 0xFF
    else:
        del data[len(data) // 2 :]
    runs.write_bytes(bytes(data))
    with pytest.raises(WarehouseError, match=rf"{runs.name} is damaged.*pt2logs repair"):
        pt2logs.connect(str(wh))
    res = CliRunner().invoke(main, ["summary", "-w", str(wh)])
    assert (
        res.exit_code == 1
        and runs.name in res.output
        and "don't know what type" not in res.output.split("damaged")[0]
    )
    wh2 = _copy(base, tmp_path / "b")
    (wh2 / "_meta.json").write_bytes(b'{"format": 1,,')
    res = CliRunner().invoke(main, ["ingest", str(SAMPLES / "recompiles"), "-w", str(wh2)])
    assert (
        res.exit_code == 1
        and "_meta.json is damaged" in res.output
        and "JSONDecodeError" not in res.output
    )

"""``pt2logs.duckdb``, the views file: prepared in a thread while a pool ingest parses into a new
warehouse (ingestion/views_file.py), it holds the same views and macros as one made in one go, and
a preparation that is not used leaves nothing behind."""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb
import pytest
from tests.conftest import SAMPLES

import pt2logs
from pt2logs.ingestion.engines import local
from pt2logs.ingestion.views_file import ViewsFile
from pt2logs.query.view_sql import view_statements
from pt2logs.store.warehouse import Warehouse

pytestmark = (
    pytest.mark.views_file
)  # (the suite turns the views file off elsewhere: tests/conftest.py)


def _unordered_lists(sql: str) -> str:
    """DuckDB keeps an ``EXCLUDE (...)`` list as a set: its order in a stored definition is arbitrary."""
    return re.sub(
        r"EXCLUDE \(([^)]*)\)",
        lambda m: "EXCLUDE (" + ", ".join(sorted(m.group(1).split(", "))) + ")",
        sql or "",
    )


def _catalog(path: str) -> tuple[list, list]:
    """Every view's SQL and every macro's definition in a DuckDB file."""
    con = duckdb.connect(path, read_only=True)
    try:
        views = sorted(
            con.execute("SELECT view_name, sql FROM duckdb_views() WHERE NOT internal").fetchall()
        )
        macros = sorted(
            con.execute(
                "SELECT function_name, function_type, macro_definition FROM duckdb_functions() "
                "WHERE function_type IN ('macro', 'table_macro') AND NOT internal"
            ).fetchall(),
            key=str,
        )
        views = [(n, _unordered_lists(sql)) for n, sql in views]
        macros = [(n, kind, _unordered_lists(sql)) for n, kind, sql in macros]
    finally:
        con.close()
    return views, macros


def _made_in_one_go(wh: str, dest: Path) -> str:
    """The views file as it was made before preparation existed: every statement on one connection."""
    con = duckdb.connect(str(dest))
    con.execute("BEGIN")
    for s in view_statements(con, Warehouse(wh)):
        con.execute(s)
    con.execute("COMMIT")
    con.close()
    return str(dest)


def _leftovers(wh: str) -> list[str]:
    return sorted(p.name for p in Path(wh).iterdir() if ".tmp" in p.name)


def test_a_pool_ingest_into_a_new_warehouse_prepares_the_same_views_file(tmp_path):
    wh = str(tmp_path / "wh")
    engine = local.ProcessPoolEngine(2)
    pt2logs.ingest([str(SAMPLES)], wh, engine=engine)
    got = _catalog(f"{wh}/pt2logs.duckdb")
    want = _catalog(_made_in_one_go(wh, tmp_path / "oracle.duckdb"))
    assert len(got[0]) > 40 and len(got[1]) > 15  # every table's view and the shared macros
    assert got == want
    assert _leftovers(wh) == []
    con = duckdb.connect(f"{wh}/pt2logs.duckdb", read_only=True)
    n_runs = con.execute("SELECT count(*) FROM runs").fetchone()[0]
    assert n_runs == pt2logs.connect(wh).execute("SELECT count(*) FROM runs").fetchone()[0] == 5
    # a macro made over the empty views answers over the real ones
    assert (
        con.execute("SELECT count(*) FROM selected_runs(NULL, NULL, NULL, NULL)").fetchone()[0]
        == n_runs
    )
    assert (
        con.execute("SELECT count(*) FROM advice_items(NULL, NULL, NULL, NULL)").fetchone()[0] > 0
    )


def test_a_preparation_is_dropped_when_the_ingest_fails_and_skipped_when_the_file_exists(tmp_path):
    wh = str(tmp_path / "wh")
    w = Warehouse(wh)
    w.init()
    views = ViewsFile(w)
    views.prepare()  # a new warehouse: the file is prepared...
    assert views._thread is not None
    views.discard()  # ...and an ingest that fails drops it
    assert _leftovers(wh) == [] and not os.path.exists(f"{wh}/pt2logs.duckdb")

    pt2logs.ingest([str(SAMPLES / "recompiles")], wh)
    before = os.stat(f"{wh}/pt2logs.duckdb").st_mtime_ns
    views = ViewsFile(w)
    views.prepare()  # the file and its signature exist: nothing to prepare
    assert views._thread is None
    assert views.write() == f"{wh}/pt2logs.duckdb"  # unchanged signature: not rewritten
    assert os.stat(f"{wh}/pt2logs.duckdb").st_mtime_ns == before

    os.remove(
        f"{wh}/_views.json"
    )  # the signature lost: prepared again, then written over the files
    views = ViewsFile(w)
    views.prepare()
    assert views._prepared()  # the prepared file is there (and write() makes only the views)
    views._ready = True
    assert views.write() == f"{wh}/pt2logs.duckdb"
    assert _catalog(f"{wh}/pt2logs.duckdb") == _catalog(
        _made_in_one_go(wh, tmp_path / "oracle.duckdb")
    )
    assert _leftovers(wh) == []


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_a_damaged_views_file_is_made_again_though_its_signature_matches(tmp_path, damage):
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(SAMPLES / "recompiles")], wh)
    path = Path(wh) / "pt2logs.duckdb"
    data = path.read_bytes()
    path.write_bytes(
        {"garbage": b"not a database\n" * 1000, "truncated": data[: len(data) // 3], "empty": b""}[
            damage
        ]
    )
    pt2logs.ingest(
        [str(SAMPLES / "recompiles")], wh
    )  # nothing new: the signature in _views.json still matches
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 1
    finally:
        con.close()
    assert _catalog(str(path)) == _catalog(_made_in_one_go(wh, tmp_path / "oracle.duckdb"))


def test_a_prepared_file_remakes_only_the_views_that_differ_and_every_view_answers(tmp_path):
    """One real GPU trace through a pool engine into a new warehouse: the file is prepared over the empty
    views, and the end makes again only the statements whose text differs (DuckDB >= 1.5 binds a view
    again when it is queried). Every view of the file answers, with the rows pt2logs itself sees."""
    from tests.conftest import FIXTURES

    from pt2logs.ingestion import views_file

    assert views_file._rebinds_views("1.5.0") and views_file._rebinds_views("2.0.1")
    assert not views_file._rebinds_views("1.4.3") and not views_file._rebinds_views("dev")
    trace = next(FIXTURES.glob("gpu/recompile_causes/trace/*.log"))
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(trace)], wh, engine=local.ProcessPoolEngine(2))
    got = _catalog(f"{wh}/pt2logs.duckdb")
    assert got == _catalog(_made_in_one_go(wh, tmp_path / "oracle.duckdb"))
    con = duckdb.connect(f"{wh}/pt2logs.duckdb", read_only=True)
    ours = pt2logs.connect(wh)
    try:
        for name, _sql in got[0]:
            n = con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]
            if not name.startswith("_"):
                assert n == ours.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0], name
        assert con.execute("SELECT count(*) FROM recompiles").fetchone()[0] > 0
    finally:
        con.close()
        ours.close()


def test_a_forked_writer_is_work_in_progress_from_the_moment_it_is_forked(tmp_path):
    """The writer `pt2logs ingest` forks is marked as work in progress (a live pid's ``.<pid>.tmp`` in the
    warehouse) when fork_writer returns, not when the writer is first scheduled: on a busy machine it may run only
    after the ingest has ended, and a settled() or a recovery that looked in between saw nothing running and no
    views file (tests/cli/test_ingest_cli.py failed so under a loaded suite). Once told, it writes the file and
    leaves no mark; told nothing (the ingest failed), it ends and leaves none either."""
    from tests.conftest import settled

    from pt2logs._fork import pid_alive
    from pt2logs.store.recovery import _PID_TMP

    def live_marks(wh: Path) -> list[str]:
        return [
            p.name
            for p in wh.iterdir()
            if (m := _PID_TMP.search(p.name)) and pid_alive(int(m.group(1)))
        ]

    for told in (True, False):
        wh = tmp_path / f"wh_{told}"
        pt2logs.ingest([str(SAMPLES / "graph_breaks")], warehouse=str(wh))
        (wh / "pt2logs.duckdb").unlink()
        views = ViewsFile(Warehouse(str(wh)))
        cpus = os.sched_getaffinity(0)
        os.sched_setaffinity(
            0, {min(cpus)}
        )  # one core: the forked writer runs after this process yields it
        try:
            views.fork_writer(ahead=False)
            assert live_marks(wh)  # at once
        finally:
            os.sched_setaffinity(0, cpus)
        if told:
            assert views.release([])
        else:
            views.discard()
        settled(wh)
        assert [p.name for p in wh.iterdir() if ".tmp" in p.name] == []
        assert (wh / "pt2logs.duckdb").exists() == told


@pytest.mark.kept_rows
def test_turned_off_no_views_file_is_made_and_the_outcomes_are_still_kept(tmp_path, monkeypatch):
    """PT2LOGS_VIEWS_FILE=0: neither the library's ingest nor the program's makes pt2logs.duckdb (an existing one
    is left as it is); the program's forked process still keeps the committed runs' outcomes."""
    import subprocess
    import sys

    from tests.conftest import settled

    from pt2logs.query import kept_rows

    monkeypatch.setenv("PT2LOGS_VIEWS_FILE", "off")
    lib = tmp_path / "lib"
    pt2logs.ingest([str(SAMPLES / "graph_breaks")], str(lib))
    assert not (lib / "pt2logs.duckdb").exists() and not (lib / "_views.json").exists()
    prog = tmp_path / "prog"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cmd = [sys.executable, "-m", "pt2logs", "ingest", str(SAMPLES / "recompiles"), "-w", str(prog)]
    assert subprocess.run([*cmd, "-q"], env=env, capture_output=True).returncode == 0
    settled(prog)
    assert not (prog / "pt2logs.duckdb").exists()
    assert [p.name for p in prog.iterdir() if ".tmp" in p.name] == []
    live = {t for (t,) in pt2logs.connect(str(prog)).execute("SELECT txn FROM runs").fetchall()}
    assert kept_rows.kept_txns(kept_rows.OUTCOMES, Warehouse(str(prog))) == live
    monkeypatch.setenv("PT2LOGS_VIEWS_FILE", "1")
    pt2logs.ingest([str(SAMPLES / "graph_breaks")], str(lib))
    assert (lib / "pt2logs.duckdb").exists()

"""Hostile inputs on the readers' side (issue 31, items 1, 2, 4, 5): documents and lines built to blow
up stay bounded, blank lines cost nothing per line, undecodable compressed files are errors (never
"empty file"), a file name that is not UTF-8 reads the same on both trace paths."""

from __future__ import annotations

import os
import shutil

import pytest
from tests.conftest import ROOT

import pt2logs

SAMPLE_TRACE = ROOT / "sample_traces" / "recompiles" / "trace"


def _rows(wh: str, sql: str) -> list[tuple]:
    con = pt2logs.connect(wh)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


# ----------------------------------------------------------------------------- item 5: non-UTF-8 names


@pytest.mark.skipif(os.name != "posix", reason="a file name of arbitrary bytes is a POSIX thing")
@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_a_trace_named_in_non_utf8_bytes_is_read_on_both_paths(tmp_path, monkeypatch, native):
    """Before: the native path lost the file (reader_failed: surrogates not allowed, from the file
    column); the Python path read it. Both now store the name with its bad bytes as \\xNN."""
    monkeypatch.setenv("PT2LOGS_NATIVE", "1" if native else "0")
    src = next(SAMPLE_TRACE.iterdir())
    d = tmp_path / "in"
    d.mkdir()
    shutil.copy(src, os.fsdecode(os.path.join(os.fsencode(d), b"rank\xff.log")))
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(d)], wh)
    assert _rows(wh, "SELECT kind FROM ingest_errors WHERE severity = 'error'") == []
    files = _rows(wh, "SELECT file, count(*) FROM events GROUP BY ALL")
    assert files == [("rank\\xff.log", files[0][1])] and files[0][1] > 1000
    ref = tmp_path / "ref"
    ref.mkdir()
    shutil.copy(src, ref / "rank.log")
    pt2logs.ingest([str(ref)], str(tmp_path / "refwh"))
    con, ref_con = pt2logs.connect(wh), pt2logs.connect(str(tmp_path / "refwh"))
    tables = [t for (t,) in con.execute("SELECT DISTINCT table_name FROM information_schema.columns WHERE column_name = 'file' "
                                        "AND table_name NOT IN ('files', 'ingest_errors')").fetchall()]
    assert "events" in tables
    for t in tables:  # every row of the file, as from a file with a plain name
        assert con.execute(f'SELECT count(*) FROM "{t}"').fetchone() == ref_con.execute(f'SELECT count(*) FROM "{t}"').fetchone(), t
    con.close()
    ref_con.close()

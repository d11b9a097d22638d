"""One stderr capture holding Spyre lines, TORCH_LOGS lines and other output: nothing is lost.

Users run with ``TORCH_LOGS=recompiles`` and ``TORCH_SPYRE_DEBUG=1`` into one stderr. The capture here
interleaves two real ones (torch 2.13's ``TORCH_LOGS=recompiles`` stderr and the Spyre debug output
of torch-spyre users, with their own foreign lines): read as one file, it must give the Spyre rows of
the Spyre capture, the recompiles and log_lines of the torch capture, and a row for every line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import FIXTURES, fixture_path

import pt2logs

pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason="shared fixtures not present")


def mixed_capture() -> tuple[bytes, bytes, bytes]:
    torch_lines = (
        fixture_path("torch_logs", "recompiles.txt").read_bytes().splitlines(keepends=True)
    )
    spyre_paras = fixture_path("spyre", "issue_excerpts.txt").read_bytes().split(b"\n\n")
    spyre = b"\n\n".join(spyre_paras)
    out: list[bytes] = []
    t = 0
    for i, para in enumerate(spyre_paras):
        out.append(para + (b"\n\n" if i < len(spyre_paras) - 1 else b""))
        out.extend(torch_lines[t : t + 3])  # three torch lines after every Spyre paragraph
        t += 3
    out.extend(torch_lines[t:])
    return b"".join(out), b"".join(torch_lines), spyre


def ingest(tmp: Path, name: str, data: bytes) -> object:
    (tmp / name).mkdir()
    (tmp / name / "stderr.txt").write_bytes(data)
    pt2logs.ingest([str(tmp / name / "stderr.txt")], str(tmp / f"wh_{name}"))
    return pt2logs.connect(str(tmp / f"wh_{name}"))


def test_a_mixed_capture_keeps_every_line(tmp_path: Path) -> None:
    mixed, torch_only, spyre_only = mixed_capture()
    con = ingest(tmp_path, "mixed", mixed)
    torch_con = ingest(tmp_path, "torch", torch_only)
    spyre_con = ingest(tmp_path, "spyre", spyre_only)
    assert con.sql("SELECT format FROM files").fetchall() == [("spyre_log",)]

    def rows(c, sql: str) -> list:
        return sorted(c.sql(sql).fetchall(), key=repr)

    # torch's lines: the recompiles and messages of the torch capture, plus the torch lines the Spyre
    # users' capture holds itself (each read alone)
    rc = "SELECT compile_id, reason, cause, co_name FROM recompiles"
    assert (
        rows(con, rc) == sorted(rows(torch_con, rc) + rows(spyre_con, rc), key=repr)
        and len(rows(torch_con, rc)) > 0
    )
    msgs = 'SELECT compile_id, artifact, n_lines, message FROM log_lines WHERE NOT "foreign"'
    assert rows(con, msgs) == sorted(rows(torch_con, msgs) + rows(spyre_con, msgs), key=repr)
    # Spyre's lines: the same rows as the Spyre capture read alone
    for sql in (
        "SELECT direction, dtype, host_bytes, device_bytes, padding_bytes FROM transfers",
        "SELECT kind, shape, message FROM spyre_messages",
        "SELECT nbytes FROM spyre_allocations",
    ):
        assert rows(con, sql) == rows(spyre_con, sql), sql
    # every line is in a row: torch messages, Spyre messages, foreign blocks
    n = mixed.count(b"\n") + (not mixed.endswith(b"\n"))
    covered = con.execute(
        "SELECT (SELECT sum(n_lines) FROM log_lines) + (SELECT sum(n_lines) FROM spyre_messages)"
    ).fetchone()[0]
    assert covered == n
    assert (
        con.execute("SELECT count(*) FROM ingest_errors WHERE severity = 'error'").fetchone()[0]
        == 0
    )

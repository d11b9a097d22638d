"""Compile time of traces whose compilation_metrics lack ``entire_frame_compile_time_s`` (torch 2.6
nightlies): taken from ``dynamo_cumulative_compile_time_us`` as torch itself does, else from the
compile's ``entire_frame_compile`` span; never 0 s.

Real traces only: a GPU fixture with the field removed from its compilation_metrics records (they carry
no payload, so no md5 has to be recomputed: checked below), and tlparse's ``simple.log``, a real 2.6
nightly trace that never had the field.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.conftest import fixture_path
from tests.rawscan import HEADER, raw_records

import pt2logs
from pt2logs.query.queries import run_named

PER_COMPILE = (
    "SELECT rank, compile_id, line_no, entire_frame_compile_time_s, backend_compile_time_s FROM compilation_metrics "
    "WHERE kind = 'compilation_metrics' ORDER BY line_no"
)


def without(src: Path, dst: Path, keys: tuple[str, ...]) -> int:
    """Copy a trace, removing ``keys`` from the metadata of its compilation_metrics records (nothing
    else changes); returns how many records lost a key."""
    n = 0
    out = []
    for line in src.read_text().split("\n"):
        m = HEADER.match(line)
        if m and m.group(1).startswith('{"compilation_metrics": {'):
            assert "has_payload" not in m.group(
                1
            )  # the metadata is in the envelope: no md5 covers it
            for k in keys:
                line, c = re.subn(rf'"{k}": [-+0-9.eE]+, |, "{k}": [-+0-9.eE]+(?=}})', "", line)
                n += c
        out.append(line)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text("\n".join(out))
    return n


def compile_times(wh: str):
    con = pt2logs.connect(wh)
    rows = con.execute(PER_COMPILE).fetchall()
    (total,) = [r["compile_s"] for r in run_named(con, "run_overview").to_pylist()]
    stages = con.execute("SELECT sum(total), sum(backend) FROM frame_compile_stages()").fetchone()
    con.close()
    return rows, total, stages


@pytest.mark.parametrize(
    "drop, tolerance",
    [
        (("entire_frame_compile_time_s",), 1e-9),  # from dynamo_cumulative_compile_time_us: exact
        (("entire_frame_compile_time_s", "backend_compile_time_s"), 1e-9),
        (
            ("entire_frame_compile_time_s", "dynamo_cumulative_compile_time_us"),
            5e-6,
        ),  # from the span: µs apart
    ],
)
def test_compile_time_without_the_legacy_field_equals_the_original(tmp_path, drop, tolerance):
    (src,) = sorted(fixture_path("gpu", "recompile_causes", "trace").glob("*.log"))
    dst = tmp_path / "trace" / src.name
    assert without(src, dst, drop) == 6 * len(drop)
    assert all(
        k not in env["compilation_metrics"]
        for env, _ in raw_records(dst)
        if "compilation_metrics" in env
        for k in drop
    )
    pt2logs.ingest([str(src.parent)], str(tmp_path / "a"))
    res = pt2logs.ingest([str(dst.parent)], str(tmp_path / "b"))
    assert res.errors == 0
    (ra, ta, sa), (rb, tb, sb) = (
        compile_times(str(tmp_path / "a")),
        compile_times(str(tmp_path / "b")),
    )
    assert len(ra) == len(rb) == 6 and ta > 1
    for a, b in zip(ra, rb):
        assert a[:3] == b[:3] and b[3] is not None and b[3] == pytest.approx(a[3], abs=tolerance)
        assert b[4] == pytest.approx(
            a[4], abs=1e-9
        )  # backend time: from aot_autograd_cumulative_compile_time_us
    assert tb == pytest.approx(ta, abs=6 * tolerance + 1e-3)  # run_overview rounds to ms
    assert sb == pytest.approx(sa, abs=6 * tolerance)


def test_a_real_2_6_nightly_trace_has_its_compile_time(tmp_path):
    log = fixture_path("tlparse", "simple.log")
    (meta,) = [
        env["compilation_metrics"] for env, _ in raw_records(log) if "compilation_metrics" in env
    ]
    assert "entire_frame_compile_time_s" not in meta
    pt2logs.ingest([str(log)], str(tmp_path / "wh"))
    rows, total, (stage_total, backend) = compile_times(str(tmp_path / "wh"))
    assert [r[3] for r in rows] == [meta["dynamo_cumulative_compile_time_us"] / 1e6]
    assert total == round(meta["dynamo_cumulative_compile_time_us"] / 1e6, 3) > 0
    assert backend == meta["aot_autograd_cumulative_compile_time_us"] / 1e6
    con = pt2logs.connect(str(tmp_path / "wh"))
    # the record as logged is kept in events, without the field
    (env,) = con.execute(
        "SELECT envelope FROM events WHERE event_type = 'compilation_metrics'"
    ).fetchone()
    assert "entire_frame_compile_time_s" not in env

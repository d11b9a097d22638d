"""The weekly headline agrees with itself: nothing is new or regressed against an empty week before."""

from __future__ import annotations

import datetime as dt
import shutil

import pytest
from tests.browser import fleet as fl

import pt2logs
from pt2logs import dashboard as D

#: the sample traces ran on 2026-11-22: the week to UNTIL holds them all
UNTIL = "2026-11-23"


def _weekly(wh: str) -> D.Page:
    return D.build(pt2logs.connect(wh), since="2026-10-26", until=UNTIL, warehouse=wh)


def test_no_runs_the_week_before_flags_nothing(sample_wh):
    page = _weekly(sample_wh)
    h = page.headline
    assert page.scope.startswith("5 runs")
    assert h.note == "No runs in the week before: nothing to compare with."
    assert h.flags == [] and h.good == []
    assert all(m.status in ("", "same") and not m.change for m in h.metrics)
    assert not any("new" in m.detail for m in h.metrics)
    html = D.render_html(page, bundle="")
    assert "Regression" not in html and "No runs in the week before" in html


@pytest.fixture(scope="module")
def two_weeks(sample_wh, tmp_path_factory) -> str:
    """The samples (this week) and a copy of the recompiles run 8 days earlier (the week before)."""
    base = tmp_path_factory.mktemp("two_weeks")
    wh = str(base / "wh")
    shutil.copytree(sample_wh, wh)
    fl.shifted_run("recompiles", base / "logs", fl.SAMPLE_DAY - dt.timedelta(days=8))
    pt2logs.ingest([str(base / "logs" / "recompiles")], wh)
    return wh


def test_runs_in_both_weeks_are_compared(two_weeks):
    h = _weekly(two_weeks).headline
    m = {x.label: x for x in h.metrics}
    assert h.note == "" and m["Runs"].detail == "1 the week before"
    # the week before had no graph breaks at all: every site this week is new, and breaks per run went up
    assert m["Graph breaks"].status == "worse" and m["Graph breaks"].change == "new"
    assert any(f.startswith("graph breaks per run up") for f in h.flags)
    assert any("new graph-break sites this week" in f for f in h.flags)
    assert m["Recompiles"].status == "better"  # 10 a run the week before, 16 over 5 runs now

"""``pt2logs serve`` in a real headless Chromium: every page kind renders with no console error and no
request outside the server, charts draw, links are followed from / down to a compile page, and the XSS
payloads planted in a trace (run folder, file name, function, reason, failure, tag) never run.
Screenshots of a run page and a compile page land in the test's temp dir, and in $PT2LOGS_SCREENSHOTS
when set (docs/images/serve_*.png were taken so)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from tests import serve_site
from tests.browser import fleet as fl
from tests.browser.cdp import Browser, find_chromium

from pt2logs.serve.render import compile_url, run_url, site_url
from pt2logs.serve.server import Background

pytestmark = pytest.mark.browser
#: every chart drawn (or failed) and the page's own state
DONE = "document.readyState === 'complete' && (!document.querySelector('script.vl-spec') || (window.__pt2logs && window.__pt2logs.done))"


@pytest.fixture(scope="module")
def chromium() -> str:
    exe, why = find_chromium(install=True)
    if exe is None:
        pytest.skip(f"the browser tests need Chromium: {why}")
    return exe


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> str:
    return serve_site.warehouse(tmp_path_factory)


@pytest.fixture(scope="module")
def url(wh):
    with Background(serve_site.app(wh)) as u:
        yield u.rstrip("/")


@pytest.fixture(scope="module")
def browser(chromium):
    with Browser(chromium, width=1280, height=900) as b:
        yield b


def visit(browser: Browser, url: str):
    tab = browser.open(url)
    tab.wait_for(DONE, timeout=90)
    return tab


def check(tab, base: str) -> None:
    assert tab.console_problems(("error", "assert")) == [], tab.console_problems()
    assert all(r.startswith(base + "/") for r in tab.requests()), [
        r for r in tab.requests() if not r.startswith(base)
    ]
    assert tab.eval("typeof window.__xss") == "undefined"
    state = tab.eval("window.__pt2logs || null")
    if state:
        assert state["errors"] == [], state
    assert not tab.eval("document.querySelector('.error-page') !== null")


def _keep(shot: Path) -> None:
    keep = os.environ.get("PT2LOGS_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)


def test_every_page_kind_renders_without_console_errors(browser, url, wh, tmp_path):
    rid = serve_site.evil_run(wh)
    pages = [
        "/?since=2000-01-01",
        "/?since=2000-01-01&by=model",
        "/runs",
        "/runs?outcome=unknown&sort=compile_s",
        run_url("recompiles"),
        run_url("ddp_2rank"),
        run_url(rid),
        compile_url("recompiles", "0/1"),
        compile_url("compile_failure", "0/0"),
        compile_url("ddp_2rank", "0/0", 1),
        compile_url(rid, "0/0"),
        site_url("gb0007"),
        site_url("size:x.size()[0]"),
        "/diff/recompiles/train_step",
        "/diff/recompiles/recompiles?compile_a=1/0&compile_b=1/1",
        "/query/graph_break_hotspots",
        "/queries",
    ]
    for p in pages:
        tab = visit(browser, url + p)
        check(tab, url)
        if p.startswith("/?"):
            drawn = tab.eval("document.querySelectorAll('.chart svg').length")
            assert (
                drawn == tab.eval("document.querySelectorAll('script.vl-spec').length")
                and drawn >= 5
            ), p
        if p == run_url("recompiles"):
            assert (
                tab.eval(
                    "document.querySelectorAll('#chart-waterfall svg g.mark-rect path').length"
                )
                > 0
            )
            _keep(tab.screenshot(tmp_path / "serve_run.png", clip=(0, 0, 1280, 1500)))
        if p == compile_url("recompiles", "0/1"):
            tab.eval("document.querySelectorAll('details.code')[0].open = true; 1")
            _keep(tab.screenshot(tmp_path / "serve_compile.png", clip=(0, 0, 1280, 1500)))


def test_links_lead_from_the_fleet_down_to_a_compile(browser, url):
    tab = visit(browser, url + "/?since=2000-01-01")
    runs = tab.eval(
        "[...document.querySelectorAll('a')].find(a => a.textContent === 'All runs').href"
    )
    tab = visit(browser, runs)
    check(tab, url)
    first = tab.eval(
        "[...document.querySelectorAll('#runs tbody a')].find(a => a.textContent === 'recompiles').href"
    )
    tab = visit(browser, first)
    check(tab, url)
    comp = tab.eval(
        "[...document.querySelectorAll('a.compile-link')].find(a => a.textContent === '0/1').href"
    )
    tab = visit(browser, comp)
    check(tab, url)
    assert "compile" in tab.eval("document.querySelector('h1').textContent")
    assert tab.eval("document.querySelectorAll('details.code').length") >= 4
    diff = tab.eval("document.querySelector('a.graph-diff').href")
    tab = visit(browser, diff)
    check(tab, url)
    assert tab.eval("document.querySelector('[data-nodes-a]').dataset.nodesA") == "5"


def test_a_click_on_a_chart_mark_opens_what_it_counts(browser, url):
    tab = visit(browser, url + run_url("recompiles"))
    at = tab.eval("""(() => { const e = document.querySelector('#chart-waterfall svg g.mark-rect path');
      e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()""")
    tab.send(
        "Input.dispatchMouseEvent",
        {"type": "mousePressed", "x": at[0], "y": at[1], "button": "left", "clickCount": 1},
    )
    tab.send(
        "Input.dispatchMouseEvent",
        {"type": "mouseReleased", "x": at[0], "y": at[1], "button": "left", "clickCount": 1},
    )
    tab.wait_for("location.pathname.includes('/compiles/')", timeout=30)


def test_planted_markup_never_runs(browser, url, wh):
    rid = serve_site.evil_run(wh)
    for p in [
        run_url(rid),
        compile_url(rid, "0/0"),
        compile_url(rid, "0/1"),
        "/runs?q=evil",
        "/?since=2000-01-01&by=model",
        "/query/recompile_list?run=" + rid,
    ]:
        tab = visit(browser, url + p)
        check(tab, url)
        assert tab.eval(
            "document.querySelectorAll('img, iframe, object, embed, svg[onload]').length"
        ) == tab.eval("document.querySelectorAll('.chart svg img').length")
        assert tab.eval(
            "[...document.scripts].every(s => s.src.startsWith(location.origin + '/static/') || s.type === 'application/json')"
        )
        body = tab.eval("document.body.innerText")
        assert fl.SCRIPT in body or fl.IMG in body, p  # shown, as text

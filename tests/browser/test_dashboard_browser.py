"""The dashboard in a real browser: headless Chromium opens the pages from file://, with no network.

Checked: no console errors or warnings, no request but the file itself, every section drew an SVG
with marks (or says why it is empty), and the XSS payloads planted in a trace (graph-break reason,
file name, failure, guard, tag, run name) never run, on the page nor in tooltips, which we open by
moving the mouse over every mark. Screenshots land in the test's temp dir (and in
$PT2LOGS_SCREENSHOTS when set): look at them when changing the dashboard.

Chromium is installed with apt-get when missing and we are root (as .ci/run does); otherwise the
tests are skipped with the reason.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path

import pytest
from tests.browser import fleet as fl
from tests.browser.cdp import Browser, find_chromium

import pt2logs
from pt2logs import dashboard as D

pytestmark = pytest.mark.browser

UNTIL = dt.datetime.combine(fl.UNTIL, dt.time(), dt.timezone.utc)
SINCE = UNTIL - dt.timedelta(weeks=4)
PAGES = {
    "weekly": {},
    "by_model": {"by": "model"},
    "run_ddp": {"run": "ddp_2rank"},
    "run_evil": {"run": "evil"},
}

SECTIONS_JS = """[...document.querySelectorAll('article[data-section]')].map(a => ({
  key: a.dataset.section,
  empty: a.querySelector('.empty') ? a.querySelector('.empty').textContent : null,
  error: !!a.querySelector('.error, .chart.failed'),
  svgs: a.querySelectorAll('.chart svg').length,
  marks: a.querySelectorAll('.chart svg g.mark-rect path, .chart svg g.mark-symbol path, .chart svg g.mark-line path').length,
  labels: a.querySelectorAll('.chart svg g.mark-text text, .chart svg .role-axis-label text').length,
}))"""

MARKS = (
    "[...document.querySelectorAll('.chart svg g.mark-rect path, .chart svg g.mark-symbol path')]"
)
#: scroll mark i into view; its centre in viewport coordinates (or null when it has no area)
MARK_AT_JS = """(() => { const e = %s[%d]; e.scrollIntoView({block: 'center', inline: 'center'});
  const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0 ? [r.x + r.width / 2, r.y + r.height / 2] : null; })()"""

TOOLTIP_JS = """(() => { const t = document.getElementById('vg-tooltip-element');
  return t && t.classList.contains('visible') ? {html: t.innerHTML, text: t.textContent,
    elements: [...t.querySelectorAll('*')].map(e => e.tagName.toLowerCase())} : null; })()"""


@pytest.fixture(scope="module")
def chromium() -> str:
    exe, why = find_chromium(install=True)
    if exe is None:
        pytest.skip(f"the browser tests need Chromium: {why}")
    return exe


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, tuple[Path, D.Page]]:
    wh, _ = fl.fleet(tmp_path_factory)
    con = pt2logs.connect(wh)
    out = tmp_path_factory.mktemp("pages")
    files = {}
    for name, kw in PAGES.items():
        if kw.get("run") == "evil":
            kw = {
                "run": con.execute("SELECT run_id FROM runs WHERE name LIKE 'evil%'").fetchall()[0][
                    0
                ]
            }
        page = D.build(con, since=SINCE, until=UNTIL, warehouse=wh, **kw)
        path = out / f"{name}.html"
        path.write_text(D.render_html(page), encoding="utf-8")
        files[name] = (path, page)
    return files


@pytest.fixture(scope="module")
def browser(chromium):
    with Browser(chromium, width=1280, height=900) as b:
        yield b


def _open(browser: Browser, path: Path):
    tab = browser.open(path.as_uri())
    tab.wait_for("window.__pt2logs && window.__pt2logs.done", timeout=60)
    return tab


def _keep(shot: Path) -> None:
    keep = os.environ.get("PT2LOGS_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
    print(f"screenshot: {shot}")


@pytest.mark.parametrize("name", list(PAGES))
def test_every_section_renders_offline_without_console_errors(browser, pages, name, tmp_path):
    path, page = pages[name]
    tab = _open(browser, path)
    state = tab.eval("window.__pt2logs")
    assert state["errors"] == []
    sections = tab.eval(SECTIONS_JS)
    assert [s["key"] for s in sections] == [c.key for c in page.cards]
    for s, card in zip(sections, page.cards, strict=True):
        assert not s["error"], s
        if card.spec is None:
            assert s["empty"] and s["svgs"] == 0, s  # says why it is empty
        else:
            assert s["svgs"] == 1 and s["marks"] >= 1 and s["labels"] >= 1, s
    assert tab.console_problems(("error", "assert", "warning")) == []
    assert tab.requests() == [path.as_uri()]  # nothing fetched: scripts and data are in the file
    _keep(tab.screenshot(tmp_path / f"dashboard-{name}.png"))


@pytest.mark.parametrize("name", ["weekly", "by_model", "run_evil"])
def test_planted_xss_is_shown_as_text_and_never_runs(browser, pages, name, tmp_path):
    path, _ = pages[name]
    tab = _open(browser, path)
    tips = []
    for i in range(min(400, tab.eval(MARKS + ".length"))):
        at = tab.eval(MARK_AT_JS % (MARKS, i))
        if at is None:
            continue
        tab.hover(*at)
        t = tab.eval(TOOLTIP_JS)
        if t:
            tips.append(t)
    tab.hover(1, 1)
    assert tips, "no tooltip appeared: hovering marks should show one"
    assert all(set(t["elements"]) <= {"table", "tbody", "tr", "td", "h2"} for t in tips), (
        "markup from data in a tooltip"
    )
    shown = [t["text"] for t in tips if fl.SCRIPT in t["text"] or fl.IMG in t["text"]]
    assert shown, "the payload should appear, as text, in some tooltip"
    assert tab.eval("typeof window.__xss") == "undefined"
    assert tab.eval("document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert tab.eval("document.scripts.length") == 3
    body = tab.eval("document.body.innerText")
    assert fl.SCRIPT in body or fl.IMG in body  # the headline / title show it as text
    assert tab.console_problems() == []
    _keep(tab.screenshot(tmp_path / f"xss-{name}.png"))


def test_content_security_policy_blocks_injected_scripts(browser, pages):
    """Defence in depth: even markup that got in could not run a script (CSP with script hashes)."""
    tab = _open(browser, pages["weekly"][0])
    tab.eval(
        "document.body.insertAdjacentHTML('beforeend', '<img src=x onerror=\"window.__csp=1\">'); "
        "const s = document.createElement('script'); s.textContent = 'window.__csp=2'; document.body.append(s); 1"
    )
    tab.wait_for(
        "document.querySelector('img') && document.querySelector('img').complete", timeout=10
    )
    assert tab.eval("typeof window.__csp") == "undefined"
    assert any(
        "Content Security Policy" in p for p in tab.console_problems(("error", "assert", "warning"))
    )

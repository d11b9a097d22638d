"""The page as one self-contained HTML document: markup, CSS, the embedding script.

Every string from a log is data: outside Vega it goes through :func:`html.escape`; chart specs
are embedded as JSON with ``<``, ``>`` and ``&`` escaped (no ``</script>`` can end the block);
tooltips are escaped by our own ``sanitize``; a Content-Security-Policy with script hashes stops
any script the page did not ship.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import html
import json
from typing import Any

from pt2logs.dashboard.bundle import vega_bundle
from pt2logs.dashboard.model import Page
from pt2logs.version import __version__


def _e(v: Any) -> str:
    return html.escape("" if v is None else str(v), quote=True)


def finite(obj: Any) -> Any:
    """``obj`` with every float that JSON cannot hold (inf, -inf, NaN) as None (null), at any depth."""
    if isinstance(obj, float):
        return obj if abs(obj) < float("inf") else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def script_json(obj: Any) -> str:
    """JSON safe inside a <script> element: no ``</script>``, ``<!--`` or line separators; a value JSON
    cannot hold (inf, NaN: chart data shaped by pt2logs.dashboard.shaping has none) is null, never an error."""
    try:
        s = json.dumps(obj, ensure_ascii=False, allow_nan=False, default=str)
    except ValueError:
        s = json.dumps(finite(obj), ensure_ascii=False, allow_nan=False, default=str)
    for a, b in (
        ("&", "\\u0026"),
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        s = s.replace(a, b)
    return s


EMBED_JS = """
const specs = JSON.parse(document.getElementById('pt2logs-specs').textContent);
const esc = (v) => String(v).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
  .replace(/"/g, '&quot;').replace(/'/g, '&#39;');
const state = window.__pt2logs = {done: false, rendered: [], errors: []};
const opts = {renderer: 'svg', actions: false, tooltip: {sanitize: esc, theme: 'light'}};
Promise.allSettled(Object.keys(specs).map((key) => {
  const el = document.getElementById('chart-' + key);
  const t0 = performance.now();
  return vegaEmbed(el, specs[key], opts).then(() => { state.rendered.push(key); (state.ms = state.ms || {})[key] = Math.round(performance.now() - t0); }).catch((err) => {
    state.errors.push(key + ': ' + err);
    el.textContent = 'This chart could not be drawn: ' + err;
    el.className = 'chart failed';
    console.error('pt2logs: chart ' + key + ' failed:', err);
  });
})).then(() => { state.done = true; document.body.dataset.rendered = String(state.rendered.length); });
"""

CSS = """
*{box-sizing:border-box}
body{margin:0;background:#f4f5f7;color:#1d2330;font:14px/1.45 "Helvetica Neue",Helvetica,Arial,"Liberation Sans","DejaVu Sans",sans-serif}
header{background:#1d2330;color:#fff;padding:22px 32px 18px}
header h1{margin:0 0 4px;font-size:24px;font-weight:600}
header .desc{margin:0 0 8px;color:#c9cfdb}
header .meta{margin:0;color:#9aa3b5;font-size:12.5px}
header .meta b{color:#dfe3ea;font-weight:500}
main{max-width:1140px;margin:0 auto;padding:20px 24px 40px}
.strip h2,.card h2{margin:0;font-size:16px;font-weight:600}
.strip{background:#fff;border-radius:8px;padding:16px 18px;margin-bottom:18px;box-shadow:0 1px 2px rgba(0,0,0,.06)}
.metrics{display:flex;flex-wrap:wrap;gap:10px;margin-top:12px}
.metric{flex:1 1 140px;border:1px solid #e3e6eb;border-left:4px solid #c5cad3;border-radius:6px;padding:8px 12px}
.metric.worse{border-left-color:#d62728;background:#fff6f6}
.metric.better{border-left-color:#2ca02c;background:#f5fbf5}
.metric .label{font-size:12px;color:#5b6475;text-transform:uppercase;letter-spacing:.04em}
.metric .value{font-size:22px;font-weight:600;margin:2px 0}
.metric .change{font-size:12.5px;font-weight:600}
.metric.worse .change{color:#b71c1c}.metric.better .change{color:#1b7a1b}
.metric .detail{font-size:12px;color:#5b6475}
.flags{margin:12px 0 0;padding:0;list-style:none}
.flags li{margin:4px 0;padding:6px 10px;border-radius:4px;font-size:13px;overflow-wrap:anywhere}
.flags li.bad{background:#fdecea;color:#8a1c1c}.flags li.good{background:#eaf6ea;color:#1f5f1f}
.flags li.info{background:#eef1f6;color:#3b4556}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(530px,1fr));gap:18px}
.card{background:#fff;border-radius:8px;padding:16px 18px 12px;box-shadow:0 1px 2px rgba(0,0,0,.06);min-width:0}
.card.wide{grid-column:1/-1}
.card .question{margin:3px 0 10px;color:#5b6475;font-size:13px}
.card .chart{overflow-x:auto;min-height:40px}
.card .empty{margin:8px 0;padding:14px;border:1px dashed #c9ced8;border-radius:6px;color:#5b6475;background:#fafbfc}
.card .error,.chart.failed{margin:8px 0;padding:14px;border-radius:6px;color:#8a1c1c;background:#fdecea}
.card .source{margin:8px 0 0;font-size:11.5px;color:#8a93a3;overflow-wrap:anywhere}
.card .source code{font-family:ui-monospace,Menlo,Consolas,"DejaVu Sans Mono",monospace;color:#5b6475}
.banner{border-radius:8px;padding:14px 18px;margin-bottom:18px;border-left:6px solid #c5cad3;background:#fff;box-shadow:0 1px 2px rgba(0,0,0,.06)}
.banner.bad{border-left-color:#d62728;background:#fdecea;color:#5c1111}.banner.good{border-left-color:#2ca02c;background:#f5fbf5}
.banner h2{margin:0;font-size:16px;font-weight:600;overflow-wrap:anywhere}
.banner ul{margin:8px 0 0;padding-left:18px}.banner li{margin:2px 0;font-size:13px;overflow-wrap:anywhere}
footer{max-width:1140px;margin:0 auto;padding:0 24px 30px;color:#8a93a3;font-size:12px}
#vg-tooltip-element{max-width:520px;overflow-wrap:anywhere}
#vg-tooltip-element td.value{white-space:normal}
"""


def render_html(page: Page, bundle: str | None = None) -> str:
    """The page as one self-contained HTML document (no network needed to view it).

    ``bundle`` is the chart library to inline (:func:`~pt2logs.dashboard.bundle.vega_bundle`'s
    text; the CLI hands in a copy it cached on disk); None builds it in memory, once per process.
    """
    bundle = vega_bundle() if bundle is None else bundle
    bundle = bundle.replace("</script", "<\\/script")  # cannot occur today; cheap insurance
    specs = {c.key: c.spec for c in page.cards if c.spec is not None}
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'"
        for s in (bundle, EMBED_JS)
    )
    csp = (
        f"default-src 'none'; script-src {hashes} 'unsafe-eval'; style-src 'unsafe-inline'; "
        "img-src data:; font-src data:; base-uri 'none'; form-action 'none'"
    )
    h = page.headline
    parts = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_e(csp)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(page.title)} · pt2logs</title><style>{CSS}</style></head>",
        f'<body data-dashboard="{_e(page.dashboard)}"><header><h1>{_e(page.title)}</h1>',
        f'<p class="desc">{_e(page.description)}</p>',
        '<p class="meta">'
        + " · ".join(
            m
            for m in (
                [f"<b>{_e(page.scope)}</b>"]
                + [f"{_e(k)} <b>{_e(v)}</b>" for k, v in page.filters]
                + [
                    f"warehouse <b>{_e(page.warehouse)}</b>" if page.warehouse else "",
                    f"generated {_e(page.generated_at.astimezone(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'))}",
                ]
            )
            if m
        )
        + "</p></header><main>",
    ]
    if page.banner is not None:
        b = page.banner
        parts.append(
            f'<section class="banner {_e(b.level)}" id="outcome"><h2>{_e(b.title)}</h2>'
            + ("<ul>" + "".join(f"<li>{_e(x)}</li>" for x in b.lines) + "</ul>" if b.lines else "")
            + "</section>"
        )
    if h.metrics or h.flags or h.note:
        parts.append(
            f'<section class="strip" id="headline"><h2>{_e(h.title)}</h2><div class="metrics">'
        )
        for m in h.metrics:
            parts.append(
                f'<div class="metric {_e(m.status)}"><div class="label">{_e(m.label)}</div>'
                f'<div class="value">{_e(m.value)}</div>'
                + (f'<div class="change">{_e(m.change)}</div>' if m.change else "")
                + f'<div class="detail">{_e(m.detail)}</div></div>'
            )
        parts.append('</div><ul class="flags">')
        parts += [f'<li class="bad">⚠ Regression: {_e(f)}</li>' for f in h.flags]
        parts += [f'<li class="good">✓ Better: {_e(g)}</li>' for g in h.good]
        if h.note:
            parts.append(f'<li class="info">{_e(h.note)}</li>')
        elif not h.flags and page.dashboard != "run":
            parts.append(
                '<li class="info">No regressions flagged (a metric per run up more than the threshold, '
                "more failures, or new graph-break sites).</li>"
            )
        parts.append("</ul></section>")
    parts.append('<div class="grid">')
    for c in page.cards:
        parts.append(
            f'<article class="card{" wide" if c.wide else ""}" id="section-{_e(c.key)}" data-section="{_e(c.key)}">'
            f'<h2>{_e(c.title)}</h2><p class="question">{_e(c.question)}</p>'
        )
        if c.spec is not None:
            parts.append(
                f'<div class="chart" id="chart-{_e(c.key)}" role="img" aria-label="{_e(c.title)}"></div>'
            )
        elif c.error:
            parts.append(f'<p class="error">This section could not be built: {_e(c.error)}</p>')
        else:
            parts.append(f'<p class="empty">{_e(c.empty)}</p>')
        parts.append(f'<p class="source">Numbers: <code>{_e(c.command)}</code></p></article>')
    parts.append("</div></main>")
    parts.append(
        f"<footer>pt2logs {_e(__version__)} · built in {page.build_s:.2f} s · charts: Vega-Lite (inlined, works offline)"
        " · hover a mark for details</footer>"
    )
    parts.append(
        f'<script type="application/json" id="pt2logs-specs">{script_json(specs)}</script>'
    )
    parts.append(f'<script type="module">{bundle}</script>')
    parts.append(f'<script type="module">{EMBED_JS}</script>')
    parts.append("</body></html>\n")
    return "\n".join(parts)

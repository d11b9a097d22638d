// The charts of a pt2logs serve page: each <script type="application/json" class="vl-spec"> drawn by
// vega-embed into its target; a click on a mark opens what it counts (a compile, a site, a run): Vega opens
// a mark's href (the overview's marks have one, pt2logs/serve/marks.py) in this tab, this script the others.
const esc = (v) => String(v).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
  .replace(/"/g, '&quot;').replace(/'/g, '&#39;');
const state = window.__pt2logs = {done: false, rendered: [], errors: []};
const seg = (v) => encodeURIComponent(String(v));
const runOf = (d) => d.run_id || d.run || document.body.dataset.run;

function target(d) {
  if (!d || typeof d !== 'object') return null;
  if (d.compile_id && runOf(d)) {
    return '/runs/' + seg(runOf(d)) + '/compiles/' + String(d.compile_id).split('/').map(seg).join('/')
      + (d.rank !== undefined && d.rank !== null ? '?rank=' + seg(d.rank) : '');
  }
  if (d.break_key) return '/sites/' + seg(d.break_key);
  if (d.failure_key) return '/sites/' + seg(d.failure_key);
  if (d.run_id) return '/runs/' + seg(d.run_id);
  return null;
}

const opts = {renderer: 'svg', actions: false, loader: {target: '_self'}, tooltip: {sanitize: esc, theme: 'light'}};
Promise.allSettled([...document.querySelectorAll('script.vl-spec')].map((s) => {
  const el = document.getElementById(s.dataset.target);
  return vegaEmbed(el, JSON.parse(s.textContent), opts).then((res) => {
    state.rendered.push(s.dataset.target);
    res.view.addEventListener('click', (_ev, item) => {
      if (item && item.datum && item.datum.href) return;  // Vega follows it
      const url = item && target(item.datum);
      if (url) window.location.assign(url);
    });
  }).catch((err) => {
    state.errors.push(s.dataset.target + ': ' + err);
    el.textContent = 'This chart could not be drawn: ' + err;
    el.className = 'chart failed';
  });
})).then(() => { state.done = true; document.body.dataset.rendered = String(state.rendered.length); });

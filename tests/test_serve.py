"""``pt2logs serve`` over HTTP: a real server on a free port, real warehouse (samples, a GPU run that
recompiles, a trace full of XSS payloads). Every route answers; /query pages are byte for byte the
CLI's JSON; log text is escaped; ``..%2f`` goes nowhere; errors are pages; a new commit shows up
without a restart; the command prints its URL and stops cleanly on Ctrl-C.
(tests/browser/test_serve_browser.py drives the same pages in Chromium.)"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from click.testing import CliRunner
from markupsafe import escape
from tests import serve_site
from tests.browser import fleet as fl
from tests.conftest import ROOT, SAMPLES

import pt2logs
from pt2logs.cli import main
from pt2logs.query.queries import load_queries, run_named
from pt2logs.serve.render import compile_url, query_url, run_url, site_url
from pt2logs.serve.server import Background


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> str:
    return serve_site.warehouse(tmp_path_factory)


@pytest.fixture(scope="module")
def url(wh):
    with Background(serve_site.app(wh)) as u:
        yield u.rstrip("/")


def get(url: str, path: str, method: str = "GET") -> tuple[int, str, bytes]:
    req = urllib.request.Request(url + path, method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.headers.get("content-type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("content-type", ""), e.read()


def raw_get(url: str, path: str) -> tuple[int, bytes]:
    """A request line sent as written (no client normalises ``..`` or ``%2f``)."""
    host, port = url.split("//", 1)[1].split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return int(data.split(b" ", 2)[1]), data


def routes(wh: str) -> list[str]:
    """Every page kind, for every run (each run's first compiles of each rank), site kind and named query."""
    con = pt2logs.connect(wh)
    runs = con.execute("SELECT run_id, name FROM runs ORDER BY name").fetchall()
    out = [
        "/?since=2000-01-01&by=model",
        "/runs",
        "/runs?outcome=unknown",
        "/runs?q=recomp&sort=compile_s&desc=0",
        "/runs?per=2&page=2",
        "/queries",
    ]
    for rid, _ in runs:
        out.append(run_url(rid))
        comps = con.execute(
            "SELECT DISTINCT rank, compile_id FROM compilation_metrics WHERE run_id = ? ORDER BY ALL LIMIT 1",
            [rid],
        ).fetchall()
        out += [compile_url(rid, c, r) for r, c in comps]
    for key in {
        r["break_key"] for r in run_named(con, "graph_break_hotspots", {"limit": 1000}).to_pylist()
    }:
        out.append(site_url(key))
    out += [
        site_url(r["failure_key"])
        for r in run_named(con, "bug_report_compiles", {"run_id": "compile_failure"}).to_pylist()
        if r["failure_key"]
    ]
    out.append(site_url("size:x.size()[0]"))
    out += [
        "/diff/recompiles/train_step",
        "/diff/recompiles/recompiles?compile_a=0/0&compile_b=0/1",
    ]
    out += [query_url(n) for n in CLI_EQUAL] + [query_url("recompile_list", {"run": "recompiles"})]
    return out


def test_every_route_answers_with_a_page_and_json(wh, url):
    paths = routes(wh)
    assert len(paths) > 40
    kinds = set()
    for p in paths:
        status, ctype, body = get(url, p)
        assert status == 200, (p, body[-600:])
        assert ctype.startswith("text/html") and b"error-page" not in body, p
        kind = (
            p.split("?")[0].split("/")[1]
            + ("/compiles" if "/compiles/" in p else "")
            + ("?" if "?" in p else "")
        )
        if p.startswith("/query/") or kind in kinds:
            continue  # the JSON of one page of each kind (/query's: test_query_json_and_csv_equal_the_cli)
        kinds.add(kind)
        status, ctype, body = get(url, p + ("&" if "?" in p else "?") + "format=json")
        assert status == 200 and ctype.startswith("application/json"), p
        assert json.loads(body), p


#: queries of every shape (fleet-wide, one run, a time window, macros, parameters): each page kind's JSON
#: is the CLI's writer's output, so a few prove the rule; every query's HTML page is in test_every_route
CLI_EQUAL = (
    "runs",
    "recompile_list",
    "graph_break_hotspots",
    "run_outcomes",
    "dash_week_over_week",
    "compile_metrics",
    "advice",
    "kernels_per_compile",
    "cache_hit_rate",
    "bug_report_artifacts",
)


def test_query_json_and_csv_equal_the_cli(wh, url):
    runner = CliRunner()
    for name, q in sorted(load_queries().items()):
        if name not in CLI_EQUAL:
            continue
        # a fixed --until: the week-over-week queries name the time they ran
        until = {"until": "2026-11-23"} if any(p.name == "until" for p in q.params) else {}
        for fmt in (
            ("json", "csv")
            if name in ("runs", "recompile_list", "graph_break_hotspots")
            else ("json",)
        ):
            cli = runner.invoke(
                main,
                [
                    "query",
                    name,
                    "-w",
                    wh,
                    "-f",
                    fmt,
                    *(("--until", until["until"]) if until else ()),
                ],
            )
            assert cli.exit_code == 0, cli.output
            status, _, body = get(url, query_url(name, {**until, "format": fmt}))
            assert status == 200 and body.decode() == cli.stdout, (name, fmt)
    cli = runner.invoke(
        main, ["query", "recompile_list", "-w", wh, "--run", "recompiles", "-f", "json"]
    )
    assert (
        get(url, query_url("recompile_list", {"run": "recompiles", "format": "json"}))[2].decode()
        == cli.stdout
    )
    assert json.loads(cli.stdout)  # a real answer, not two empty ones


@pytest.mark.parametrize(
    "path",
    [
        "/static/..%2fapp.py",
        "/static/..%2f..%2fserve%2fapp.py",
        "/static/%2e%2e%2fstore.py",
        "/static/../app.py",
        "/runs/..%2f..%2f..%2fetc%2fpasswd",
        "/runs/recompiles/compiles/..%2f..%2f..%2f..%2fetc%2fpasswd",
        "/runs/recompiles/compiles/../../../../etc/passwd",
        "/sites/..%2f..%2fetc%2fpasswd",
        "/query/..%2f..%2fqueries%2fruns",
        "/query/..%2fruns",
        "/diff/..%2f..%2f/etc",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/static/pygments.css%00.py",
    ],
)
def test_dot_dot_never_escapes(url, path):
    status, data = raw_get(url, path)
    assert status in (400, 404), (path, data[:300])
    assert b"root:" not in data and b"import " not in data and b"SELECT" not in data, path


def test_log_markup_is_escaped_on_every_page(wh, url):
    rid = serve_site.evil_run(wh)
    pages = [
        "/?since=2000-01-01&by=model",
        "/runs",
        "/runs?q=evil",
        run_url(rid),
        compile_url(rid, "0/0"),
        compile_url(rid, "0/1"),
        query_url("runs"),
        query_url("recompile_list", {"run": rid}),
        "/diff/recompiles/" + rid,
    ]
    con = pt2logs.connect(wh)
    pages += [
        site_url(k)
        for (k,) in con.execute(
            "SELECT DISTINCT break_key FROM graph_breaks WHERE run_id = ?", [rid]
        ).fetchall()
    ]
    seen = 0
    for p in pages:
        status, _, body = get(url, p)
        text = body.decode()
        assert status == 200, (p, text[-500:])
        for payload in (fl.SCRIPT, fl.IMG, fl.ATTR, "<svg onload", "<img src=x"):
            assert payload not in text, (p, payload)
        seen += (
            "&lt;script&gt;window.__xss=1&lt;/script&gt;" in text or "&lt;img src=x onerror" in text
        )
    assert seen >= 5  # the payloads are on the pages, as text


def test_errors_are_pages_not_tracebacks(url):
    for path, status, words in [
        ("/runs/no-such-run", 404, "no run matches"),
        ("/query/no_such_query", 404, "No named query"),
        ("/runs?sort=nope", 400, "cannot sort"),
        ("/runs?page=x", 400, "whole numbers"),
        ("/runs/recompiles/compiles/9/9", 404, "has no compile"),
        ("/diff/recompiles/recompiles?compile_a=0/0", 400, "needs both"),
        ("/query/runs?since=yesterday-ish", 400, "cannot read"),
        ("/nowhere", 404, "No page here"),
        ("/sites/no-such-site", 404, "No graph-break site"),
        ("/runs?format=xml", 400, "Unknown format"),
    ]:
        got, ctype, body = get(url, path)
        assert got == status and ctype.startswith("text/html"), (path, got)
        assert words in body.decode() and "Traceback" not in body.decode(), (path, body[-400:])
    got, _, body = get(url, "/runs", method="POST")
    assert got == 405 and b"read-only" in body
    got, ctype, body = get(url, "/runs/no-such-run?format=json")
    assert got == 404 and json.loads(body)["status"] == 404


def test_runs_sort_search_outcome_and_paging(wh, url):
    rows = json.loads(get(url, "/runs?format=json")[2])
    names = sorted(r["run"] for r in rows)
    assert len(rows) == len(pt2logs.connect(wh).execute("SELECT * FROM runs").fetchall())
    by_time = json.loads(get(url, "/runs?sort=compile_s&format=json")[2])
    assert [r["compile_s"] for r in by_time] == sorted((r["compile_s"] for r in rows), reverse=True)
    assert [
        r["run"] for r in json.loads(get(url, "/runs?sort=run&desc=0&format=json")[2])
    ] == sorted(names, key=str.lower)
    assert {r["run"] for r in json.loads(get(url, "/runs?q=RECOMPILES&format=json")[2])} == {
        "recompiles"
    }
    assert json.loads(get(url, "/runs?outcome=hung&format=json")[2]) == []
    page2 = get(url, "/runs?sort=run&desc=0&per=2&page=2")[2].decode()
    ordered = [str(escape(n)) for n in sorted(names, key=str.lower)]
    assert f">{ordered[2]}<" in page2 and f">{ordered[0]}<" not in page2
    assert "page 2 of" in page2
    csv = get(url, "/runs?format=csv")[2].decode().splitlines()
    assert len(csv) == len(rows) + 1 and csv[0].startswith("run_id,run,")


def test_graph_diff_page_counts_nodes_and_ops(url):
    g = json.loads(
        get(url, "/diff/recompiles/recompiles?compile_a=1/0&compile_b=1/1&format=json")[2]
    )
    assert g["nodes"] == {"a": 4, "b": 5} and g["op_count"] == {
        "a": 2,
        "b": 2,
    }  # torch's graph_node/op_count
    assert [n["name"] for n in g["added"]] == ["s77"] and g["removed"] == []
    assert {c["b"]["name"] for c in g["changed"]} == {"L_x_", "sigmoid", "sub"}
    html = get(url, "/diff/recompiles/recompiles?compile_a=1/0&compile_b=1/1")[2].decode()
    assert 'data-nodes-a="4" data-nodes-b="5"' in html and "f32[s77, 16]" in html
    status, _, body = get(url, "/diff/recompiles/recompiles?compile_a=0/0&compile_b=0/1&graph=nope")
    assert status == 400


def test_compile_page_shows_evidence(url):
    html = get(url, compile_url("recompiles", "0/1"))[2].decode()
    for words in (
        "Replaces",
        "shape_mismatch",
        "Graph diff against 0/0",
        "guard diff against 0/0",
        "Dynamo graph",
        "Inductor output code",
        'class="hl"',
        "Cache lookups",
        "Phases",
        "Metrics",
        "Kernels",
    ):
        assert words in html, words
    assert (
        '<section class="card" id="stack">' in html and "generate.py:87</b> in shape_static" in html
    )  # a user frame
    from pt2logs.serve.pages_run import split_stack

    user, lib = split_stack(
        [
            "Line: 474, Name: <module>, Filename: /home/a/generate.py",
            "Line: 511, Name: __call__, Filename: /x/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py",
            "Line: 67, Name: inner, Filename: /x/lib/python3.11/site-packages/torch/_dynamo/external_utils.py",
            "Line: 12, Name: f, Filename: /home/a/model.py",
        ]
    )
    assert [f["func"] for f in user] == ["<module>", "f"] and [f["func"] for f in lib] == [
        "__call__",
        "inner",
    ]
    fail = get(url, compile_url("compile_failure", "0/0"))[2].decode()
    assert "Failed:" in fail and "/sites/" in fail


def test_a_new_commit_shows_up_without_a_restart(tmp_path):
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(SAMPLES / "train_step")], wh)
    app = serve_site.app(wh)
    with Background(app) as u:
        assert len(json.loads(get(u.rstrip("/"), "/runs?format=json")[2])) == 1
        assert (
            len(json.loads(get(u.rstrip("/"), "/runs?format=json")[2])) == 1
            and len(app.state.cache.pages) == 1
        )
        pt2logs.ingest([str(SAMPLES / "recompiles")], wh)
        time.sleep(1.1)  # the connection lists the commits at most once a second
        # the cached page was made over the old commits: not served again
        assert {r["run"] for r in json.loads(get(u.rstrip("/"), "/runs?format=json")[2])} == {
            "train_step",
            "recompiles",
        }
        assert app.state.store.generation == 2


def test_the_command_prints_its_url_and_stops_on_ctrl_c(wh):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    p = subprocess.Popen(
        [sys.executable, "-m", "pt2logs", "serve", "-w", wh, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        line = p.stdout.readline()
        assert line.startswith("pt2logs serve: ") and "http://127.0.0.1:" in line, (
            line
        )  # localhost by default
        u = line.split(" at ", 1)[1].split(" ", 1)[0].rstrip("/")
        assert get(u, "/runs")[0] == 200
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0 and "Traceback" not in err, err
    assert "stopped" in out


def test_the_command_refuses_a_missing_warehouse(tmp_path):
    r = CliRunner().invoke(main, ["serve", "-w", str(tmp_path / "none")])
    assert r.exit_code == 2 and "no warehouse" in r.output


def test_the_query_link_of_every_card_is_its_command(url):
    from pt2logs.serve.pages_fleet import command_params

    assert command_params(
        "pt2logs query graph_break_hotspots --since 7d --tag model=a -p limit 15"
    ) == ("graph_break_hotspots", {"since": "7d", "tag": "model=a", "limit": "15"})
    html = get(url, "/?since=2000-01-01&by=model")[2].decode()
    assert "/query/graph_break_hotspots?since=2000-01-01" in html


def test_assets_are_local(url):
    html = get(url, "/?since=2000-01-01&by=model")[2].decode()
    assert "http://" not in html.replace(url, "") and "https://" not in html.split("<main>")[0]
    for asset in ("/static/vega.js", "/static/app.js", "/static/serve.css", "/static/pygments.css"):
        status, _, body = get(url, asset)
        assert status == 200 and body, asset
    # an icon of no bytes, inline: a browser asks for no /favicon.ico (a 404 in every page's console)
    assert '<link rel="icon" href="data:,">' in html.split("</head>")[0]

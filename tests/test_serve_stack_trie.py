"""The run page's stack trie (pt2logs.serve.stack_trie) on real traces: every compile's path from a root is
exactly the stack of its dynamo_start record (read here from the raw envelopes, file names looked up in the
trace's string table), frames shared by compiles are merged, and each compile links to its page."""

from __future__ import annotations

import json

import pytest
from tests import serve_site
from tests.test_serve import get

import pt2logs
from pt2logs.serve.render import compile_url, run_url
from pt2logs.serve.server import Background


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    wh = serve_site.warehouse(tmp_path_factory)
    with Background(serve_site.app(wh)) as u:
        yield pt2logs.connect(wh), u.rstrip("/")


def _raw_stacks(con, run_id):
    """{((rank, file, compile_id), ((filename, line, function), ...))} from the events' envelopes (a compile
    logged twice from two places of the program is there twice)."""
    strs, out = {}, set()
    rows = con.execute(
        "SELECT rank, file, event_type, compile_id, envelope FROM events WHERE run_id = ? "
        "AND event_type IN ('str', 'dynamo_start') ORDER BY file, line_no",
        [run_id],
    ).fetchall()
    for rank, file, kind, cid, env in rows:
        e = json.loads(env)
        if kind == "str":
            strs[(rank, file, e["str"][1])] = e["str"][0]
        else:
            out.add(
                (
                    (rank, file, cid),
                    tuple(
                        (
                            strs.get((rank, file, f["filename"]))
                            if isinstance(f["filename"], int)
                            else f["filename"],
                            f["line"],
                            f["name"],
                        )
                        for f in e["dynamo_start"]["stack"]
                    ),
                )
            )
    return out


def _paths(nodes, above=()):
    for n in nodes:
        here = (*above, (n["filename"], n["line"], n["function"]))
        for c in n["compiles"]:
            yield c, [tuple(x) for x in here]
        yield from _paths(n["children"], here)


def test_stack_trie_is_each_compiles_dynamo_start_stack(site):
    con, url = site
    runs = con.execute(
        "SELECT run_id FROM events WHERE event_type = 'dynamo_start' GROUP BY run_id "
        "HAVING count(*) > 1 ORDER BY count(*) DESC"
    ).fetchall()
    assert runs
    for (run_id,) in runs:
        raw = _raw_stacks(con, run_id)
        page = json.loads(get(url, run_url(run_id) + "?format=json")[2])["stack_trie"]
        got = {
            ((t["rank"], t["file"], cid), tuple(path))
            for t in page
            for cid, path in _paths(t["roots"])
        }
        assert got == raw, run_id
        frames = sum(len(p) for _, p in raw)
        nodes = sum(1 for t in page for _ in _walk(t["roots"]))
        assert nodes < frames  # shared outer frames are one node
    html = get(url, run_url(runs[0][0]))[2].decode()
    assert 'id="stack-trie"' in html
    for (rank, _, cid), _ in _raw_stacks(con, runs[0][0]):
        assert compile_url(runs[0][0], cid, rank).replace("&", "&amp;") in html


def _walk(nodes):
    for n in nodes:
        yield n
        yield from _walk(n["children"])

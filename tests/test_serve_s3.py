"""``pt2logs serve --warehouse s3://…``: the app over a warehouse in a real local S3 (moto's server) answers the
run list, a run page and a compile page with the warehouse's own facts, as it does over a folder."""

from __future__ import annotations

import json

import pytest
from markupsafe import escape
from tests.conftest import SAMPLES
from tests.s3server import moto_s3
from tests.test_serve import get

import pt2logs
from pt2logs.serve.render import compile_url, run_url
from pt2logs.serve.server import Background


@pytest.fixture(scope="module")
def served():
    with moto_s3() as fs:
        fs.mkdir("serve")
        wh = "s3://serve/wh/"
        pt2logs.ingest([str(SAMPLES / "recompiles")], wh)
        from tests.serve_site import app

        a = app(wh)
        with Background(a) as u:
            yield a, u.rstrip("/")


def _facts(con):
    """A run of the warehouse, its first compile that logged a Dynamo graph (rank, id, text), its compiles."""
    run_id, name = con.execute("SELECT run_id, name FROM runs").fetchall()[0]
    rank, cid, graph = con.execute(
        "SELECT rank, compile_id, payload FROM events WHERE run_id = ? AND "
        "coalesce(artifact_name, event_type) = 'dynamo_output_graph' AND payload IS NOT NULL "
        "ORDER BY compile_id LIMIT 1",
        [run_id],
    ).fetchall()[0]
    compiles = con.execute(
        "SELECT count(*) FROM compilation_metrics WHERE run_id = ? AND kind = 'compilation_metrics'",
        [run_id],
    ).fetchall()[0][0]
    return run_id, name, rank, cid, graph, compiles


def test_serves_a_warehouse_in_an_object_store(served):
    app, url = served
    with app.state.store.read() as con:  # the app's own connection: its views over the bucket
        run_id, name, rank, cid, graph, compiles = _facts(con)
    runs = json.loads(get(url, "/runs?format=json")[2])
    assert [(r["run_id"], r["compiles"]) for r in runs] == [(run_id, compiles)]
    status, _, body = get(url, run_url(run_id))
    assert status == 200 and str(escape(name)) in body.decode()
    assert compile_url(run_id, cid).split("?")[0] in body.decode()
    status, _, body = get(url, compile_url(run_id, cid, rank))
    page = body.decode()
    assert status == 200 and "Dynamo graph" in page
    # the graph's text came from the payload store in the bucket (its first line, as Pygments splits it)
    first = graph.strip().splitlines()[0].split("(")[0].strip()
    assert first and first.split()[-1] in page

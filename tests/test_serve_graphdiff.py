"""The FX graph diff on real consecutive compiles of recompiling frames (the sample traces' `recompiles`,
and the GPU fixture `recompile_causes` of torch 2.11 when present): every parsed graph has the node and op
counts torch itself logged for the compile (compilation_metrics graph_node_count / graph_op_count), and the
diff of consecutive compiles names what their text shows changed."""

from __future__ import annotations

import re

import pytest
from tests import serve_site

import pt2logs
from pt2logs.query.queries import run_named
from pt2logs.serve.graphdiff import diff_graphs, parse_graph


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    return pt2logs.connect(serve_site.warehouse(tmp_path_factory))


def graphs(con, run: str) -> dict[tuple, tuple[str, dict]]:
    """(rank, compile id) → (the Dynamo graph's text, the compile's compilation_metrics row)."""
    mets = {
        (m["rank"], m["compile_id"]): m
        for m in run_named(con, "compile_metrics", {"run_id": run}).to_pylist()
        if m["kind"] == "compilation_metrics"
    }
    out = {}
    for a in run_named(con, "bug_report_artifacts", {"run_id": run}).to_pylist():
        k = (a["rank"], a["compile_id"])
        if a["what"] == "dynamo_output_graph" and a["payload"] and k in mets:
            out[k] = (a["payload"], mets[k])
    return out


RUNS = ["recompiles", "train_step", "graph_breaks", "ddp_2rank", "recompile_causes"]


@pytest.mark.parametrize("run", RUNS)
def test_node_and_op_counts_are_torchs(con, run):
    if run == "recompile_causes" and not serve_site.GPU_RECOMPILES.is_dir():
        pytest.skip("the shared GPU fixtures are not here")
    gs = graphs(con, run)
    assert gs
    for k, (text, m) in gs.items():
        g = parse_graph(text)
        assert (len(g.nodes), g.op_count) == (m["graph_node_count"], m["graph_op_count"]), (run, k)
        # and the text's own: one annotated line per op node, one parameter per input
        annotated = len(
            re.findall(
                r'^\s+\w+: "[^"]*" = ',
                text.split("class ", 2)[1] if text.count("class ") > 1 else text,
                re.M,
            )
        )
        assert annotated >= g.op_count, (run, k)
        assert sum(1 for n in g.nodes if n.kind == "placeholder") == m["graph_input_count"], (
            run,
            k,
        )


def _frames(gs: dict) -> dict[tuple, list[str]]:
    """Each frame's compiles in order (a frame F recompiles as F/0, F/1, ...)."""
    out: dict[tuple, list[str]] = {}
    for rank, cid in sorted(
        gs, key=lambda k: (k[0] or 0, [int(x) for x in re.findall(r"\d+", k[1])])
    ):
        out.setdefault((rank, cid.rsplit("/", 1)[0]), []).append(cid)
    return out


@pytest.mark.parametrize("run", ["recompiles", "recompile_causes"])
def test_consecutive_compiles_of_a_recompiling_frame(con, run):
    if run == "recompile_causes" and not serve_site.GPU_RECOMPILES.is_dir():
        pytest.skip("the shared GPU fixtures are not here")
    gs = graphs(con, run)
    pairs = [
        (f[i], f[i + 1], rank) for (rank, _), f in _frames(gs).items() for i in range(len(f) - 1)
    ]
    assert len(pairs) >= 3, pairs
    for a, b, rank in pairs:
        ta, ma = gs[(rank, a)]
        tb, mb = gs[(rank, b)]
        d = diff_graphs(ta, tb)
        assert (len(d.a.nodes), len(d.b.nodes)) == (ma["graph_node_count"], mb["graph_node_count"])
        assert (
            sum(r["a"] for r in d.ops) == ma["graph_op_count"]
            and sum(r["b"] for r in d.ops) == mb["graph_op_count"]
        )
        assert len(d.b.nodes) - len(d.a.nodes) == len(d.added) - len(d.removed)
        plus = {ln[1:] for ln in d.unified if ln.startswith("+") and not ln.startswith("+++")}
        minus = {ln[1:] for ln in d.unified if ln.startswith("-") and not ln.startswith("---")}
        for x, y in d.changed:  # a changed node's line is on both sides of the unified diff
            assert any((y.args or y.name) in ln for ln in plus) and any(
                (x.args or x.name) in ln for ln in minus
            ), (a, b, y)
        if ta == tb:
            assert not (d.added or d.removed or d.changed or d.unified)
        else:
            assert d.unified and (d.added or d.removed or d.changed), (a, b)


def test_the_shape_recompile_of_the_samples(con):
    gs = graphs(con, "recompiles")
    d = diff_graphs(gs[(None, "0/0")][0], gs[(None, "0/1")][0])  # x: f32[4, 16] → f32[8, 16]
    assert d.added == d.removed == []
    assert [(x.name, x.type, y.type) for x, y in d.changed][0] == (
        "L_x_",
        "f32[4, 16][16, 1]cpu",
        "f32[8, 16][16, 1]cpu",
    )
    assert {y.name for _, y in d.changed} == {"L_x_", "relu", "mul", "add"}
    assert d.ops == [
        {"op": "operator.add", "a": 1, "b": 1, "delta": 0},
        {"op": "operator.mul", "a": 1, "b": 1, "delta": 0},
        {"op": "torch.relu", "a": 1, "b": 1, "delta": 0},
    ]
    d = diff_graphs(
        gs[(None, "1/0")][0], gs[(None, "1/1")][0]
    )  # shape_auto: the size becomes a symbol
    assert [(n.name, n.kind, n.type) for n in d.added] == [("s77", "placeholder", "Sym(s77)")]


def test_nodes_inserted_upstream_align_by_target_and_occurrence():
    a = """class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[4]cpu"):
        l_x_ = L_x_
        sin: "f32[4]cpu" = torch.sin(l_x_);  l_x_ = None
        mul: "f32[4]cpu" = sin * 2;  sin = None
        return (mul,)
"""
    b = a.replace(
        '        mul: "f32[4]cpu" = sin * 2;  sin = None\n',
        '        cos: "f32[4]cpu" = torch.cos(sin)\n        mul: "f32[4]cpu" = cos * 2;  cos = None\n',
    )
    d = diff_graphs(a, b)
    assert [n.target for n in d.added] == ["torch.cos"] and d.removed == []
    assert [(x.args, y.args) for x, y in d.changed] == [("sin * 2", "cos * 2")]
    assert {r["op"]: r["delta"] for r in d.ops} == {
        "torch.cos": 1,
        "torch.sin": 0,
        "operator.mul": 0,
    }
    assert parse_graph("not a graph").nodes == [] and parse_graph(None).nodes == []

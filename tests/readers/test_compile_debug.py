"""TORCH_COMPILE_DEBUG folders: graph files → debug_artifacts and kernels; the folder is one run."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import fixture_path

import pt2logs
from pt2logs.analysis.output_code import parse_output_code
from pt2logs.readers import detect
from pt2logs.readers.documents.compile_debug import (
    folder_facts,
    read_compile_debug,
    sniff_compile_debug,
)
from pt2logs.readers.kit import FileContext

RUN_DIR = "run_2026_11_22_09_50_07_314672-pid_18968"
GRAPH = f"torch_compile_debug/{RUN_DIR}/torchinductor/model__0_forward_1.0"


def read(relpath: str, data: bytes):
    ctx = FileContext(file=relpath, path="/x/" + relpath)
    out: dict[str, list[pa.RecordBatch]] = {}
    for name, batch in read_compile_debug(
        [data[i : i + 1000] for i in range(0, len(data), 1000)] or [b""], ctx
    ):
        out.setdefault(name, []).append(batch)
    return {k: pa.Table.from_batches(v).to_pylist() for k, v in out.items()}, ctx.stats


def output_code_modules() -> list[str]:
    """The generated modules inside fixtures/torch_logs/output_code.txt (TORCH_LOGS=output_code), prefixes stripped."""
    mods: list[list[str]] = []
    for line in fixture_path("torch_logs", "output_code.txt").read_text().split("\n"):
        m = re.match(
            r"^V\d{4} \S+ +\d+ torch/_inductor/graph\.py:\d+\] \[[^\]]+\] \[__output_code\] (.*)$",
            line,
        )
        if not m:
            continue
        if m.group(1).startswith("Output code: "):
            mods.append([])
        elif mods and not m.group(1).startswith("Output code written to"):
            mods[-1].append(m.group(1))
    return ["\n".join(m) + "\n" for m in mods]


def test_folder_facts():
    f = folder_facts(f"{GRAPH}/output_code.py")
    assert f == {
        "kind": "output_code",
        "debug_run": RUN_DIR,
        "pid": 18968,
        "graph_dir": "model__0_forward_1.0",
        "aot_id": 0,
        "graph": "forward",
        "nth_graph": 1,
    }
    assert folder_facts("x/model__12_backward_37.4/ir_post_fusion.txt")["aot_id"] == 12
    assert folder_facts("output_code.py")["graph"] is None


def test_output_code_file_gives_kernels_and_an_artifact_row():
    mod = output_code_modules()[0]
    t, stats = read(f"{GRAPH}/output_code.py", mod.encode())
    oc = parse_output_code(mod)
    assert [k["kernel_name"] for k in t["kernels"]] == [
        k.kernel_name for k in oc.kernels
    ] and oc.kernels
    assert all(
        k["source"] == "compile_debug" and k["graph"] == "forward" and k["compile_id"] is None
        for k in t["kernels"]
    )
    for k in t["kernels"]:  # the line of the kernel's definition
        assert mod.split("\n")[k["line_no"] - 1].startswith(f"{k['kernel_name']} = async_compile.")
    assert sum(e["count"] for e in t.get("extern_calls", [])) == sum(oc.extern_calls.values())
    (art,) = t["debug_artifacts"]
    assert (art["kind"], art["aot_id"], art["graph"], art["pid"], art["n_nodes"]) == (
        "output_code",
        0,
        "forward",
        18968,
        len(oc.kernels),
    )
    assert art["text"] == mod and art["n_lines"] == mod.count("\n")
    assert stats.errors == stats.warnings == 0 and stats.events == 1


def test_graph_and_ir_files():
    fx = 'class GraphModule(torch.nn.Module):\n    def forward(self, x: "f32[8]"):\n        sin: "f32[8]" = torch.ops.aten.sin.default(x)\n        return (sin,)\n'
    t, _ = read(f"{GRAPH}/fx_graph_readable.py", fx.encode())
    assert t["debug_artifacts"][0]["n_nodes"] == 1 and "kernels" not in t
    ir = "op0: SchedulerNode(ComputedBuffer)\nop0.writes = []\n\n\nop1_op2: FusedSchedulerNode(NoneType)\n"
    t, _ = read(f"{GRAPH}/ir_post_fusion.txt", ir.encode())
    assert (t["debug_artifacts"][0]["kind"], t["debug_artifacts"][0]["n_nodes"]) == (
        "ir_post_fusion",
        2,
    )


def test_sniffing_by_name_and_content():
    assert sniff_compile_debug(
        b"# AOT ID: ['0_forward']\nfrom ctypes import c_void_p\n", "output_code.py"
    )
    assert sniff_compile_debug(b"class GraphModule(torch.nn.Module):\n", "fx_graph_readable.py")
    assert sniff_compile_debug(b"\nimport os\nos.environ['X'] = '1'\n", "fx_graph_runnable.py")
    assert sniff_compile_debug(b"op0: SchedulerNode(ComputedBuffer)\n", "ir_pre_fusion.txt")
    assert sniff_compile_debug(
        b'{"preToPost": {}}', "inductor_provenance_tracking_node_mappings.json"
    )
    assert not sniff_compile_debug(b"# AOT ID: ['0_forward']\n", "my_script.py")
    assert not sniff_compile_debug(b"\x00\x01binary", "output_code.py")
    assert not sniff_compile_debug(b"some notes\n", "ir_post_fusion.txt")
    assert (
        detect(b"op0: SchedulerNode(ComputedBuffer)\n", "ir_post_fusion.txt").name
        == "compile_debug"
    )


def make_debug_folder(root: Path) -> Path:
    """A TORCH_COMPILE_DEBUG folder (two processes' run folders, a tlparse/ trace) from real pieces."""
    dbg = root / "job" / "torch_compile_debug"
    trace = sorted(fixture_path("gpu", "recompile_causes", "trace").glob("*.log"))[0]
    (dbg / "tlparse").mkdir(parents=True)
    shutil.copy(trace, dbg / "tlparse" / trace.name)
    mods = output_code_modules()
    for i, (run, graph) in enumerate(
        [
            (RUN_DIR, "model__0_forward_1.0"),
            (RUN_DIR, "model__0_backward_3.1"),
            ("run_2026_11_22_09_51_00_000001-pid_18999", "model__1_inference_4.2"),
        ]
    ):
        g = dbg / run / "torchinductor" / graph
        g.mkdir(parents=True)
        (g / "output_code.py").write_text(mods[i])
        (g / "fx_graph_readable.py").write_text(
            "class GraphModule(torch.nn.Module):\n    def forward(self, x):\n        y = x\n"
        )
        (g / "ir_post_fusion.txt").write_text("op0: SchedulerNode(ComputedBuffer)\n")
        (dbg / run / "torchinductor" / "aot_model___0_debug.log").write_text("")
        (dbg / run / "torchdynamo").mkdir(exist_ok=True)
    (dbg / RUN_DIR / "torchdynamo" / "debug.log").write_text(
        "V1122 09:50:07.500000 18968 torch/_dynamo/convert_frame.py:1] [0/0] torchdynamo start compiling f\n"
    )
    shutil.copy(
        fixture_path("gpu", "recompile_causes", "torch_logs.txt"), root / "job" / "stderr.txt"
    )
    return root / "job"


def test_a_debug_folder_is_one_run_with_its_trace_and_stderr(tmp_path):
    job = make_debug_folder(tmp_path)
    wh = str(tmp_path / "wh")
    res = pt2logs.ingest([str(job)], wh)
    assert res.runs_new == 1 and res.errors == 0
    assert sorted(Path(p).name for p, _ in res.skipped) == [
        "aot_model___0_debug.log",
        "aot_model___0_debug.log",
    ]
    con = pt2logs.connect(wh)
    assert con.execute("SELECT name, formats FROM runs").fetchall() == [
        ("job", ["compile_debug", "torch_logs", "torch_trace"])
    ]
    rel = sorted(r[0] for r in con.execute("SELECT relpath FROM files").fetchall())
    assert (
        "stderr.txt" in rel
        and "torch_compile_debug/tlparse/"
        + next((job / "torch_compile_debug" / "tlparse").iterdir()).name
        in rel
    )
    assert f"torch_compile_debug/{RUN_DIR}/torchdynamo/debug.log" in rel
    assert len([r for r in rel if r.endswith("output_code.py")]) == 3
    arts = con.execute(
        "SELECT kind, graph, aot_id, pid, count(*) FROM debug_artifacts GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    assert ("output_code", "inference", 1, 18999, 1) in arts and (
        "fx_graph_readable",
        "backward",
        0,
        18968,
        1,
    ) in arts
    kernels = con.execute(
        "SELECT source, count(*) FROM kernels_all_sources GROUP BY 1 ORDER BY 1"
    ).fetchall()
    assert [s for s, _ in kernels] == ["compile_debug", "trace"]
    # the trace wins in the default view
    assert con.execute("SELECT DISTINCT source FROM kernels").fetchall() == [("trace",)]


def test_a_debug_folder_without_trace_is_still_one_run(tmp_path):
    job = make_debug_folder(tmp_path)
    shutil.rmtree(job / "torch_compile_debug" / "tlparse")
    (job / "stderr.txt").unlink()
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(job / "torch_compile_debug")], wh)
    con = pt2logs.connect(wh)
    assert con.execute("SELECT name, formats, n_files FROM runs").fetchall() == [
        ("torch_compile_debug", ["compile_debug", "torch_logs"], 10)
    ]
    assert con.execute("SELECT DISTINCT source FROM kernels").fetchall() == [("compile_debug",)]


@settings(max_examples=100, deadline=None)
@given(
    st.binary(max_size=500),
    st.sampled_from(["output_code.py", "fx_graph_readable.py", "ir_post_fusion.txt", "other.txt"]),
)
def test_arbitrary_bytes_never_raise(data, name):
    read(f"{GRAPH}/{name}", data)


@pytest.mark.slow
def test_real_torch_compile_debug_folder(tmp_path):
    from tests.test_sources_agree import real_run

    run = real_run()
    dbg = run / "torch_compile_debug"
    wh = str(tmp_path / "wh")
    res = pt2logs.ingest([str(dbg)], wh)
    assert res.runs_new == 1 and res.errors == 0
    con = pt2logs.connect(wh)
    assert con.execute("SELECT formats FROM runs").fetchone()[0] == ["compile_debug", "torch_trace"]
    graphs = con.execute(
        "SELECT graph_dir, graph, count(*) FROM debug_artifacts GROUP BY ALL"
    ).fetchall()
    assert len(graphs) == 4 and {g for _, g, _ in graphs} == {"inference"}
    kinds = {k for (k,) in con.execute("SELECT DISTINCT kind FROM debug_artifacts").fetchall()}
    assert {
        "output_code",
        "fx_graph_readable",
        "fx_graph_runnable",
        "ir_pre_fusion",
        "ir_post_fusion",
    } <= kinds
    assert (
        con.execute(
            "SELECT min(n_nodes) FROM debug_artifacts WHERE kind IN ('fx_graph_readable', 'ir_post_fusion')"
        ).fetchone()[0]
        >= 1
    )
    # the same kernels as the trace in tlparse/ (its inductor_output_code payloads are these modules)
    k = "SELECT kernel_name, backend, kind, fused_ops, graph FROM kernels_all_sources WHERE source = ? ORDER BY ALL"
    assert con.execute(k, ["compile_debug"]).fetchall() == con.execute(k, ["trace"]).fetchall()
    texts = {
        t
        for (t,) in con.execute(
            "SELECT text FROM debug_artifacts WHERE kind = 'output_code'"
        ).fetchall()
    }
    payloads = {
        p
        for (p,) in con.execute(
            "SELECT payload FROM events WHERE event_type = 'inductor_output_code'"
        ).fetchall()
    }
    assert texts <= {p if p.endswith("\n") else p + "\n" for p in payloads} | payloads

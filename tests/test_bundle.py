"""`pt2logs bundle`: bug reports for a failing compile and for a Spyre run, checked as GitHub renders them.

The Markdown is parsed with markdown-it-py (CommonMark, GitHub's base; tables enabled as in GFM):
headings, fenced blocks whose content is the logged text, balanced <details> sections, no user or host
name left, and the .zip holding every excerpt. Inputs: the gpu/compile_failure fixture (torch 2.11,
paths rewritten to /home/alice), tlparse's comp_failure.log (/data/users/xmfan paths), a real torch
2.13 run made here through `pt2logs run` with a backend that raises, and the Spyre fixtures.
"""

from __future__ import annotations

import json
import re
import socket
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from markdown_it import MarkdownIt
from tests.conftest import fixture_path
from tests.rawscan import artifact_name, event_key, raw_records

import pt2logs
from pt2logs.bugreport import bug_report
from pt2logs.cli import main
from pt2logs.redaction.redact import Redactor
from pt2logs.reports.markdown import code, details, fence

GFM = MarkdownIt("commonmark").enable("table")


def parse(text: str) -> list:
    return GFM.parse(text)


def headings(tokens: list) -> list[tuple[str, str]]:
    return [
        (t.tag, tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"
    ]


def fences(tokens: list) -> list[str]:
    return [t.content for t in tokens if t.type == "fence"]


def assert_details_balanced(tokens: list) -> int:
    """<details> and </details> alternate as HTML blocks (GitHub folds what is between them); their count."""
    depth = n = 0
    for t in tokens:
        if t.type != "html_block":
            continue
        opened = len(re.findall(r"<details\b", t.content))
        closed = t.content.count("</details>")
        depth += opened - closed
        n += opened
        assert depth >= 0, t.content
    assert depth == 0
    return n


def raw_payload(path: Path, what: str, frame: int = 0, attempt_of: int = 0) -> str:
    """The last payload of kind ``what`` logged for compile ``frame/attempt_of``."""
    (p,) = [
        p
        for env, p in raw_records(path)
        if (artifact_name(env) or event_key(env)) == what
        and (env.get("frame_id"), env.get("frame_compile_id")) == (frame, attempt_of)
    ][-1:]
    return p


# ---------------------------------------------------------------- the Markdown helpers


@pytest.mark.parametrize(
    "text", ["plain", "a ``` fence inside\n```\nand ```` four", "`", "ends with `"]
)
def test_a_fence_cannot_be_broken_by_what_it_holds(text):
    tokens = parse("before\n\n" + fence(text, "text") + "\nafter\n")
    assert fences(tokens) == [text + "\n"]
    assert [t.content for t in tokens if t.type == "inline"] == ["before", "after"]


def test_code_spans_and_details_keep_log_text_as_text():
    span = code("x`y | <b>z</b>")
    *_, inline = [t for t in parse(f"| a |\n|---|\n| {span} |\n") if t.type == "inline"]
    (c,) = [ch for ch in inline.children if ch.type == "code_inline"]
    assert c.content == "x`y | <b>z</b>"
    html = details("<script>alert(1)</script>", fence("</details> inside a fence"))
    tokens = parse(html)
    assert assert_details_balanced(tokens) == 1 and "<script>" not in html
    assert fences(tokens) == ["</details> inside a fence\n"]


def test_the_redactor_takes_out_who_and_where():
    r = Redactor(users=["root"], hosts=["gpu-17.cluster.example.com"])
    t = (
        'File "/home/alice/proj/train.py" by alice on gpu-17 (gpu-17.cluster.example.com, 10.1.2.3) '
        "/tmp/torchinductor_bob/x C:\\Users\\carol\\x.py HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123 /root/.cache "
        "torch 2.13.0 at 127.0.0.1 for root"
    )
    r.learn(t)
    out = r(t)
    for gone in ("alice", "bob", "carol", "gpu-17", "10.1.2.3", "hf_abc", "/home/", "/root/"):
        assert gone not in out, gone
    assert (
        "~/proj/train.py" in out
        and "torchinductor_<user>" in out
        and "<host>" in out
        and "<ip>" in out
    )
    assert (
        "2.13.0" in out and "127.0.0.1" in out and out.endswith("for root")
    )  # versions, loopback, generic names stay


# ---------------------------------------------------------------- a failing compile


@pytest.fixture(scope="module")
def failing_wh(tmp_path_factory):
    wh = str(tmp_path_factory.mktemp("bundle") / "wh")
    pt2logs.ingest([str(fixture_path("gpu", "compile_failure"))], wh)
    pt2logs.ingest([str(fixture_path("tlparse", "comp_failure.log"))], wh)
    return wh


def _run_id(wh: str, root_part: str) -> str:
    con = pt2logs.connect(wh)
    (rid,) = [
        r
        for r, root in con.execute("SELECT run_id, root FROM runs").fetchall()
        if root_part in root
    ]
    return rid


def test_a_failing_compile_bundle(failing_wh):
    trace = next(fixture_path("gpu", "compile_failure", "trace").glob("*.log"))
    rep = bug_report(pt2logs.connect(failing_wh), _run_id(failing_wh, "gpu/compile_failure"))
    tokens = parse(rep.markdown)
    hs = headings(tokens)
    assert hs[0] == ("h1", "BackendCompilerFailed report in `<lambda>`")
    assert [h for t, h in hs if t == "h2"] == [
        "Environment",
        "The failing compile: `0/0`",
        "Graphs and code",
        "What the advice table says (`pt2logs advise`)",
        "What to try next",
    ]
    advice = rep.markdown.split("## What the advice table says", 1)[1].split("\n## ", 1)[0]
    assert "TORCHDYNAMO_REPRO_AFTER" in advice  # the backend failure's advice: the minifier
    assert rep.compile_id == "0/0" and assert_details_balanced(tokens) >= 3
    blocks = fences(tokens)
    (metrics,) = [
        env["compilation_metrics"]
        for env, _ in raw_records(trace)
        if event_key(env) == "compilation_metrics" and env["compilation_metrics"].get("fail_type")
    ]
    exc = f"{metrics['fail_type'].rsplit('.', 1)[-1]}: {metrics['fail_reason']}"
    assert exc.strip() + "\n" in blocks  # the exception as the trace logged it
    # the Dynamo graph and the traceback as logged, home folder redacted (the fixture's paths are /home/alice)
    graph = raw_payload(trace, "dynamo_output_graph").replace("/home/alice", "~")
    assert graph.rstrip("\n") in [b.rstrip("\n") for b in blocks]
    tb = raw_payload(trace, "dynamo_error").replace("/home/alice", "~")
    assert rep.files["excerpts/0-0_dynamo_error.txt"].rstrip("\n") == tb.rstrip("\n")
    assert "alice" not in rep.markdown and "/home/" not in rep.markdown
    assert "alice" not in "".join(rep.files.values())
    # what to try next: the minifier; a custom backend failed (no AOT graphs), so after=dynamo first, aot after
    sh = [b for b in blocks if "TORCHDYNAMO_REPRO_LEVEL=2" in b]
    assert (
        sh
        and "TORCHDYNAMO_REPRO_AFTER=dynamo TORCHDYNAMO_REPRO_LEVEL=2 python your_script.py"
        in sh[0]
    )
    assert "TORCHDYNAMO_REPRO_AFTER=aot" in sh[0]


def test_no_redact_keeps_the_home_folder(failing_wh):
    rep = bug_report(
        pt2logs.connect(failing_wh), _run_id(failing_wh, "gpu/compile_failure"), redact=False
    )
    assert "/home/alice/" in rep.markdown and "Nothing was redacted" in rep.markdown


def test_a_tlparse_failure_bundle_and_its_zip(failing_wh, tmp_path):
    out = tmp_path / "report.zip"
    res = CliRunner().invoke(
        main, ["bundle", _run_id(failing_wh, "comp_failure.log"), "-w", failing_wh, "-o", str(out)]
    )
    assert res.exit_code == 0, res.output
    with zipfile.ZipFile(out) as z:
        names = z.namelist()
        md = z.read("report.md").decode()
        tb = z.read("excerpts/0-0_dynamo_error.txt").decode()
    assert "report.md" in names and "excerpts/0-0_dynamo_output_graph.txt" in names
    raw = raw_payload(fixture_path("tlparse", "comp_failure.log"), "dynamo_error")
    assert "xmfan" in raw and "xmfan" not in tb + md  # /data/users/xmfan/... is a home folder
    assert tb.rstrip("\n") == raw.replace("/data/users/xmfan", "~").rstrip("\n")
    assert "RuntimeError: broken backend" in md and assert_details_balanced(parse(md)) >= 2
    res = CliRunner().invoke(
        main,
        ["bundle", _run_id(failing_wh, "comp_failure.log"), "-w", failing_wh, "--compile", "9/9"],
    )
    assert res.exit_code != 0 and "has no compile '9/9'; its compiles: 0/0" in res.output


# ---------------------------------------------------------------- a real run through `pt2logs run`

_SCRIPT = """
import torch

def broken(gm, example_inputs):
    raise RuntimeError("the backend gave up on " + str(len(example_inputs)) + " inputs")

f = torch.compile(lambda x: x.cos() * 2, backend=broken)
f(torch.randn(4))
"""


def test_a_run_recorded_by_pt2logs_run(tmp_path, monkeypatch):
    script = tmp_path / "job.py"
    script.write_text(_SCRIPT)
    wh = str(tmp_path / "wh")
    monkeypatch.setenv("TORCHDYNAMO_VERBOSE", "1")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TORCH_SPYRE_TOKEN", "s3cr3t-value")
    res = CliRunner().invoke(
        main, ["run", "-w", wh, "--name", "job", "--", sys.executable, str(script)]
    )
    assert res.exit_code != 0  # the backend raised
    out = tmp_path / "report.md"
    res = CliRunner().invoke(main, ["bundle", "job", "-w", wh, "-o", str(out)])
    assert res.exit_code == 0, res.output
    md = out.read_text()
    tokens = parse(md)
    blocks = fences(tokens)
    (env,) = [b for b in blocks if "TORCHDYNAMO_VERBOSE=1" in b]
    assert "TORCH_TRACE=" in env and "TORCH_SPYRE_TOKEN=***" in env and "s3cr3t" not in md
    assert any(b.startswith(f"{sys.executable}") or "job.py" in b for b in blocks)  # the command
    assert "RuntimeError: the backend gave up on 1 inputs" in md
    (sh,) = [b for b in blocks if "TORCHDYNAMO_REPRO_LEVEL=2" in b]
    assert "job.py" in sh  # the minifier runs the recorded command
    host = socket.gethostname()  # this machine's name, which `pt2logs run` recorded as the host
    assert "| host | `<host>` |" in md and not re.search(
        rf"(?<![\w.-]){re.escape(host)}(?![\w-])", md
    )


# ---------------------------------------------------------------- Spyre


@pytest.fixture(scope="module")
def spyre_wh(tmp_path_factory):
    wh = str(tmp_path_factory.mktemp("spyre") / "wh")
    pt2logs.ingest(
        [str(fixture_path("spyre", "constructed"))], wh, tags={"job": "add", "backend": "spyre"}
    )
    pt2logs.ingest(
        [str(fixture_path("spyre", "issue_excerpts.txt"))],
        wh,
        tags={"job": "add", "backend": "sendnn"},
    )
    return wh


def test_a_spyre_bundle(spyre_wh):
    rep = bug_report(pt2logs.connect(spyre_wh), "constructed")
    tokens = parse(rep.markdown)
    assert "Spyre" in [h for t, h in headings(tokens) if t == "h2"]
    assert assert_details_balanced(tokens) >= 2
    blocks = fences(tokens)
    (log,) = [b for b in blocks if "RUN: sdsc_fused_add_0" in b]
    raw_lines = fixture_path("spyre", "constructed", "example_logs.txt").read_text().splitlines()
    assert "src ( Half ) is on: cpu" in log and all(
        any(ln.endswith(x) for ln in raw_lines) for x in log.splitlines()
    )
    # the kernel launched (sdsc_fused_add_0) is the add spec: sdsc_0.json, in full in the zip
    spec = json.loads(rep.files["excerpts/spyre_sdsc_0.json"])
    assert spec == json.loads(fixture_path("spyre", "constructed", "sdsc_0.json").read_text())
    assert "excerpts/spyre_sdsc_1.json" not in rep.files
    # sendnn vs spyre: the run of the same job on the other backend
    (cmp_head,) = [h for t, h in headings(tokens) if t == "h3" and "sendnn" in h]
    assert "issue_excerpts.txt" in cmp_head
    assert "| figure | this run | other run |" in rep.markdown
    row = re.search(r"\| `copies host_to_device` \| `(\d+)` \| `(\d+)` \|", rep.markdown)
    to_device = len(
        re.findall(
            r"(?:src|self) \( \w+ \) is on: cpu",
            fixture_path("spyre", "constructed", "example_logs.txt").read_text(),
        )
    )
    assert row and int(row.group(1)) == to_device == 1 and int(row.group(2)) > 0


def test_a_spyre_bundle_redacts_the_user_in_its_temp_folders(spyre_wh):
    raw = fixture_path("spyre", "issue_excerpts.txt").read_text()
    user = re.search(r"torchinductor_(\w+)", raw).group(1)
    rep = bug_report(pt2logs.connect(spyre_wh), "issue_excerpts.txt")
    assert user not in rep.markdown and "torchinductor_<user>" in rep.markdown
    assert (
        user in bug_report(pt2logs.connect(spyre_wh), "issue_excerpts.txt", redact=False).markdown
    )
    tokens = parse(rep.markdown)
    assert assert_details_balanced(tokens) >= 1 and any(
        "torchinductor_<user>" in b for b in fences(tokens)
    )


# ---------------------------------------------------------------- guard failures


def test_the_guard_failures_of_the_compiled_function(sample_wh):
    from tests.conftest import SAMPLES

    rep = bug_report(pt2logs.connect(sample_wh), "recompiles")
    fn = rep.facts.compile["function"]
    # the raw trace: the recompile_reasons of the compiles of that function (frame ids from its metrics)
    (trace,) = (SAMPLES / "recompiles" / "trace").glob("*.log*")
    frames = {
        env.get("frame_id")
        for env, _ in raw_records(trace)
        if event_key(env) == "compilation_metrics"
        and env["compilation_metrics"].get("co_name") == fn
    }
    reasons = [
        p
        for env, p in raw_records(trace)
        if artifact_name(env) == "recompile_reasons" and env.get("frame_id") in frames
    ]
    assert reasons
    tokens = parse(rep.markdown)
    (head,) = [h for t, h in headings(tokens) if h.startswith("Guard failures")]
    assert head == f"Guard failures (recompiles of `{fn}`)"
    section = rep.markdown.split("## Guard failures", 1)[1].split("\n## ", 1)[0]
    assert (
        f"<summary>{len(reasons)} recompiles</summary>" in section
        or f"{len(reasons) + 1} recompiles" in section
    )
    for p in reasons:  # each failed guard's first line is in the table
        first = (json.loads(p)[0] if p.lstrip().startswith("[") else p.splitlines()[0]).strip()
        first = re.sub(
            r"^\d+/\d+: ", "", first
        )  # the artifact names the compile whose guard failed first
        assert first.replace("|", "\\|")[:40] in section, first


def test_the_advice_of_the_run_is_in_its_report(sample_wh):
    con = pt2logs.connect(sample_wh)
    items = json.loads(
        CliRunner()
        .invoke(main, ["advise", "recompiles", "-w", sample_wh, "--format", "json"])
        .output
    )
    assert items  # the recompiles sample hits the advice table
    rep = bug_report(con, "recompiles")
    assert "What the advice table says (`pt2logs advise`)" in [
        h for _, h in headings(parse(rep.markdown))
    ]
    section = rep.markdown.split("## What the advice table says", 1)[1].split("\n## ", 1)[0]
    for r in items[:5]:  # the most costly, each with its evidence and what to do
        assert code(r["evidence"]) in section and r["advice"] in section
    clean = next(
        r["run_id"]
        for r in json.loads(
            CliRunner().invoke(main, ["query", "runs", "-w", sample_wh, "-f", "json"]).output
        )
        if not json.loads(
            CliRunner()
            .invoke(main, ["advise", r["run_id"], "-w", sample_wh, "--format", "json"])
            .output
        )
    )
    assert (
        "## What the advice table says" not in bug_report(con, clean).markdown
    )  # nothing to say: no section


# ---------------------------------------------------------------- TORCH_COMPILE_DEBUG files


@pytest.mark.slow
def test_a_compile_debug_folder_without_a_trace_shows_its_graphs(tmp_path):
    from tests.test_sources_agree import real_run

    (graph,) = sorted(real_run().glob("torch_compile_debug/run_*/torchinductor/model__*"))[:1]
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(graph)], wh)  # one graph folder: a run with no trace, only the files
    rep = bug_report(pt2logs.connect(wh), None)
    tokens = parse(rep.markdown)
    assert (
        "Graphs and code" in [h for t, h in headings(tokens) if t == "h2"]
        and assert_details_balanced(tokens) >= 3
    )
    blocks = [b.rstrip("\n") for b in fences(tokens)]
    for name in ("fx_graph_readable.py", "output_code.py"):
        text = (graph / name).read_text().rstrip("\n")
        assert (
            text in blocks
            or rep.files[f"excerpts/compile_debug_{name.split('.')[0]}.txt"].rstrip("\n") == text
        )


# ---------------------------------------------------------------- every real capture


def test_every_fixture_run_bundles_as_balanced_markdown_without_its_users(tmp_path):
    """Each run of the shared fixtures (tlparse's test logs, the GPU scenarios, TORCH_LOGS captures and
    pastes, Spyre logs): a report that parses, folds balanced, fits an issue and names no user."""
    wh = str(tmp_path / "wh")
    for part in ("tlparse", "gpu", "torch_logs", "spyre"):
        pt2logs.ingest([str(fixture_path(part))], wh)
    con = pt2logs.connect(wh)
    runs = con.execute("SELECT run_id, name FROM runs").fetchall()
    assert len(runs) > 30
    users = {
        "alice",
        "xmfan",
    }  # the fixtures' home folders: /home/alice (rewritten), /data/users/xmfan (tlparse)
    for run_id, name in runs:
        rep = bug_report(con, run_id)
        tokens = parse(rep.markdown)
        assert headings(tokens)[0][0] == "h1" and headings(tokens)[-1] == (
            "h2",
            "What to try next",
        ), name
        assert_details_balanced(tokens)
        assert len(rep.markdown) <= 60_000, name
        text = rep.markdown + "".join(rep.files.values())
        assert not any(re.search(rf"\b{u}\b", text) for u in users), name
        assert "/home/" not in text and "/data/users/" not in text, name

"""Every TORCH_TRACE event kind and artifact name the installed torch can write (read from its source by
tests/torch_event_scan.py) is either interpreted (the handler table) or kept raw on purpose with a reason
(readers/trace/kept_raw.py), and docs/events.md says so."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.conftest import ROOT
from tests.torch_event_scan import scan, torch_source

from pt2logs.readers.trace import handlers, kept_raw
from pt2logs.tables import TABLES


@pytest.fixture(scope="module")
def torch_names():
    try:
        return scan(torch_source())
    except FileNotFoundError:
        pytest.skip("torch is not installed")


def uncovered(s) -> tuple[list[str], list[str]]:
    kinds = sorted(
        k
        for k in s.kinds
        if k != "artifact" and k not in handlers.HANDLERS and k not in kept_raw.KINDS
    )
    arts = sorted(
        n
        for n in s.artifacts
        if n not in handlers.ARTIFACT_HANDLERS and n not in kept_raw.ARTIFACTS
    )
    return kinds, arts


def test_every_name_torch_writes_is_handled_or_kept_raw_with_a_reason(torch_names):
    kinds, arts = uncovered(torch_names)
    assert not kinds and not arts, (
        f"torch writes these, and no handler nor kept_raw entry covers them: kinds {kinds}, "
        f"artifacts {[(a, sorted(torch_names.artifacts[a])[:2]) for a in arts]}"
    )
    # the scan found the calls it should (a scan that finds nothing passes nothing)
    assert {"compilation_metrics", "bwd_compilation_metrics_runtime", "create_symbol"} <= set(
        torch_names.kinds
    )
    assert {"fx_graph_cache_hit", "aotautograd_cache_bypass", "dynamo_error"} <= set(
        torch_names.artifacts
    )


def test_what_the_scan_cannot_resolve_is_said(torch_names):
    """Every name torch 2.13 builds is resolved (a constant, a local, a caller's argument) or a pattern with
    `*` where it is known only at run time; nothing is left unnamed."""
    assert torch_names.unresolved == []
    assert "*_ORIGINAL_BYTECODE" in torch_names.artifacts  # code.co_name + '_ORIGINAL_BYTECODE'
    assert "aot_saved_tensors_hooks_pack *" in torch_names.kinds  # a caller's f-string
    # cache_state set in branches: each outcome, none left as a pattern
    assert {f"aotautograd_cache_{o}" for o in ("hit", "miss", "bypass")} <= set(
        torch_names.artifacts
    )


@pytest.mark.skipif(
    not os.environ.get("PT2LOGS_SECOND_TORCH"),
    reason="PT2LOGS_SECOND_TORCH (another torch's package folder, e.g. unpacked from its wheel) not set",
)
def test_another_torch_source_is_covered_too():
    """The same check on a second torch (torch 2.14.1's wheel, unpacked, passed here; one name there is made
    from an attribute set elsewhere and stays unresolved: codegen.py's artifact_name)."""
    s = scan(Path(os.environ["PT2LOGS_SECOND_TORCH"]))
    assert uncovered(s) == ([], []), uncovered(s)


def test_the_scan_fails_on_a_new_name(tmp_path: Path):
    """A name nobody covers is reported (the check is not vacuous): a torch tree with one new call."""
    pkg = tmp_path / "torch" / "_dynamo"
    pkg.mkdir(parents=True)
    (pkg / "new.py").write_text(
        "def f(kind):\n"
        "    trace_structured(kind)\n"
        "def g():\n"
        "    f('brand_new_kind')\n"
        "    torch._logging.trace_structured('artifact', metadata_fn=lambda: {'name': f'new_{x}_art'})\n"
        "    trace_structured_artifact('compile_fx_new_thing', 'string')\n"
    )
    s = scan(tmp_path / "torch")
    assert uncovered(s) == (["brand_new_kind"], ["compile_fx_new_thing", "new_*_art"])


def test_kept_raw_entries_have_reasons_and_are_not_also_handled():
    for name, why in {**kept_raw.KINDS, **kept_raw.ARTIFACTS}.items():
        assert why and len(why) > 10, name
    assert not set(kept_raw.KINDS) & set(handlers.HANDLERS)
    assert not set(kept_raw.ARTIFACTS) & set(handlers.ARTIFACT_HANDLERS)
    assert frozenset(kept_raw.KINDS) == handlers.KNOWN_PLAIN


def test_every_handler_says_which_tables_it_feeds():
    for h in [*handlers.HANDLERS.values(), *handlers.ARTIFACT_HANDLERS.values()]:
        for t in handlers.feeds(h):
            assert t in TABLES, (h, t)
    rows = handlers.coverage_rows()
    assert ("artifact", "fx_graph_cache_hit", "cache_events, cache_key_components", None) in rows
    assert ("symbolic_shape_specialization", None, "dynamic_shapes", None) in rows
    assert ("describe_tensor", None, "", kept_raw.KINDS["describe_tensor"]) in rows


def test_events_doc_matches_the_registry():
    from pt2logs.docgen import events_markdown

    assert (ROOT / "docs" / "events.md").read_text() == events_markdown(), (
        "run: python -m pt2logs.docgen"
    )


def test_runtime_metrics_on_tlparse_runtime_logs(tmp_path):
    """compilation_metrics_runtime records (runtime Triton autotuning on 5 of tlparse's 7 ranks, torch 2.9
    nightly): one row per rank and compile id, the times torch measured."""
    import json

    from tests.conftest import fixture_path

    import pt2logs
    from pt2logs.query.queries import run_named

    folder = fixture_path("tlparse", "multi_rank_runtime")
    want = {}
    for f in sorted(folder.glob("*rank_*.log")):
        rank = int(f.name.split("rank_")[1].split(".")[0].split("_")[0])
        for line in f.read_text(errors="replace").splitlines():
            if '{"compilation_metrics_runtime"' in line:
                m = json.loads(line[line.index("{") :])["compilation_metrics_runtime"]
                k = (rank, m["compile_id"])
                want[k] = want.get(k, 0) + m["runtime_triton_autotune_time_us"]
    wh = str(tmp_path / "wh")
    pt2logs.ingest([str(folder)], wh)
    rows = run_named(pt2logs.connect(wh), "runtime_metrics", {}).to_pylist()
    got = {(r["rank"], r["compile_id"]): r["autotune_s"] for r in rows}
    assert want and got == {k: round(v / 1e6, 3) for k, v in want.items()}
    assert {r["graph"] for r in rows} == {"forward"}

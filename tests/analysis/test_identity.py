"""Identities: paths, user frames, break keys and masking, table-tested on real paths.

Sources: F = the fixtures (gpu/ torch 2.11 / Python 3.12 under /opt/torch/.venv; torch_logs/ torch
2.13 under /opt/conda; tlparse/ torch source checkouts and buck link-trees; wild_pastes/ Windows);
S = sample_traces (torch 2.13 / Python 3.11 under /work/main/.venv and pyenv); I = the issue's
examples; W = other common layouts (conda, venv, pyenv, Debian, Windows, macOS framework builds).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import fixture_path

from pt2logs.analysis.identity import (
    break_key,
    classify_path,
    common_dir,
    mask,
    parse_frame_text,
    pick_frames,
    user_dir,
)

PATHS = [
    # (path as logged, kind, key, python version the path shows)
    ("/opt/torch/.venv/lib/python3.12/site-packages/torch/nn/modules/module.py", "library", "torch/nn/modules/module.py", "3.12"),  # F
    ("/opt/conda/lib/python3.11/site-packages/torch/_dynamo/convert_frame.py", "library", "torch/_dynamo/convert_frame.py", "3.11"),  # F
    ("/work/main/.venv/lib/python3.11/site-packages/torch/nn/parallel/distributed.py", "library", "torch/nn/parallel/distributed.py", "3.11"),  # S
    ("/opt/torch/.venv/lib/python3.12/site-packages/torch/nn/parallel/distributed.py", "library", "torch/nn/parallel/distributed.py", "3.12"),  # I
    ("/root/.pyenv/versions/3.11.7/lib/python3.11/contextlib.py", "stdlib", "<stdlib>/contextlib.py", "3.11"),  # S, I
    ("/usr/lib/python3.12/contextlib.py", "stdlib", "<stdlib>/contextlib.py", "3.12"),  # I
    ("/usr/lib/python3/dist-packages/numpy/core/numeric.py", "library", "numpy/core/numeric.py", None),  # W Debian
    ("/usr/local/lib/python3.10/site-packages/foo-1.0-py3.10.egg/foo/bar.py", "library", "foo/bar.py", "3.10"),  # W egg
    ("/Library/Frameworks/Python.framework/Versions/3.11/lib/python3.11/copy.py", "stdlib", "<stdlib>/copy.py", "3.11"),  # W
    ("/home/ubuntu/prime-rl/.venv/lib/python3.10/site-packages/transformers/models/llama/modeling_llama.py", "library", "transformers/models/llama/modeling_llama.py", "3.10"),  # F wild
    ("site-packages/torch/_dynamo/guards.py", "library", "torch/_dynamo/guards.py", None),  # F glog pathname
    ("torch/_dynamo/symbolic_convert.py", "library", "torch/_dynamo/symbolic_convert.py", None),  # F glog pathname
    ("Lib\\site-packages\\torch\\_dynamo\\convert_frame.py", "library", "torch/_dynamo/convert_frame.py", None),  # F Windows glog
    ("C:\\Users\\me\\proj\\.venv\\Lib\\site-packages\\torch\\nn\\modules\\module.py", "library", "torch/nn/modules/module.py", None),  # W
    ("C:\\Python312\\Lib\\contextlib.py", "stdlib", "<stdlib>/contextlib.py", "3.12"),  # W
    ("C:\\Users\\me\\miniconda3\\envs\\dev\\Lib\\copy.py", "stdlib", "<stdlib>/copy.py", None),  # W
    ("G:\\ComfyUI_windows_portable\\ComfyUI\\custom_nodes\\ComfyUI-MochiWrapper\\mochi_preview\\dit\\joint_model\\asymm_models_joint.py", "user",
     "G:/ComfyUI_windows_portable/ComfyUI/custom_nodes/ComfyUI-MochiWrapper/mochi_preview/dit/joint_model/asymm_models_joint.py", None),  # F wild
    ("C:\\Users\\me\\proj\\Lib\\utils.py", "user", "C:/Users/me/proj/Lib/utils.py", None),  # W: a user folder called Lib
    ("/home/skarjala/pytorch/torch/_dynamo/external_utils.py", "library", "torch/_dynamo/external_utils.py", None),  # F source checkout
    ("/data/users/xmfan/a/pytorch/torch/__init__.py", "library", "torch/__init__.py", None),  # F
    ("/data/users/shangdiy/fbsource/buck-out/v2/gen/fbcode/4de56deb453463b3/caffe2/test/inductor/__provenance_tracing__/provenance_tracing#link-tree/torch/nn/modules/linear.py",
     "library", "torch/nn/modules/linear.py", None),  # F buck link-tree
    ("/data/users/xmfan/a/pytorch/test/dynamo/test_misc.py", "user", "/data/users/xmfan/a/pytorch/test/dynamo/test_misc.py", None),  # F
    ("/home/alice/bench/scenarios.py", "user", "/home/alice/bench/scenarios.py", None),  # F
    ("/home/u/torch/my_model.py", "user", "/home/u/torch/my_model.py", None),  # W: a user folder called torch
    ("/home/u/lib/utils.py", "user", "/home/u/lib/utils.py", None),  # W
    ("<eval_with_key>.5", "other", "<eval_with_key>.N", None),  # F
    ("<ipython-input-3-d766d9f4b6a6>", "other", "<ipython-input-N-…>", None),  # F wild
    ("<frozen runpy>", "stdlib", "<frozen runpy>", None),  # W
]  # fmt: skip


@pytest.mark.parametrize(("path", "kind", "key", "python"), PATHS)
def test_classify_real_paths(path: str, kind: str, key: str, python: str | None) -> None:
    assert tuple(classify_path(path)) == (kind, key, python)


def test_the_same_file_is_one_key_under_every_install() -> None:
    keys = {classify_path(p).key for p, _, key, _ in PATHS if key.endswith("contextlib.py")}
    assert keys == {"<stdlib>/contextlib.py"}
    dist = [p for p, *_ in PATHS if p.endswith("parallel/distributed.py")]
    assert len(dist) == 2 and len({classify_path(p).key for p in dist}) == 1


def _fixture_frames() -> list[tuple[str, str]]:
    """Every ``File "..."`` path of the GPU fixtures' traces and TORCH_LOGS (torch 2.11, /opt/torch/.venv)
    and of the torch_logs/ captures (torch 2.13, /opt/conda)."""
    out = set()
    gpu, text = fixture_path("gpu"), fixture_path("torch_logs")
    for f in [
        *gpu.glob("*/trace/*.log"),
        *gpu.glob("*/torch_logs.txt"),
        *text.glob("*.txt"),
        *text.glob("*.log"),
    ]:
        out |= set(re.findall(r'File \\?"([^"\\]+)\\?", line', f.read_text(errors="replace")))
    return sorted(out)


def test_every_fixture_frame_is_user_code_or_has_an_install_free_key() -> None:
    paths = _fixture_frames()
    assert len(paths) >= 35
    for p in paths:
        pid = classify_path(p)
        if p.startswith("/home/alice/"):
            assert pid.kind == "user" and pid.key == p, p
        elif "/site-packages/" in p:
            assert pid.kind == "library" and pid.key == p.split("/site-packages/", 1)[1], p
        else:
            assert pid.kind in ("stdlib", "other"), (p, pid)
        assert "/opt/" not in (pid.key or "") and "python3.12" not in (pid.key or ""), p


# ------------------------------------------------------------------ user frame and library frame


DDP_STACK = [  # S: sample_traces/ddp_2rank, the gb0007 break (torch 2.13, Python 3.11)
    ("/work/main/sample_traces/generate.py", 474, "<module>"),
    ("/work/main/sample_traces/generate.py", 273, "scenario_ddp_2rank"),
    (
        "/work/main/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py",
        1778,
        "_wrapped_call_impl",
    ),
    (
        "/work/main/.venv/lib/python3.11/site-packages/torch/nn/parallel/distributed.py",
        1714,
        "_run_ddp_forward",
    ),
    ("/root/.pyenv/versions/3.11.7/lib/python3.11/contextlib.py", 301, "helper"),
    ("/root/.pyenv/versions/3.11.7/lib/python3.11/contextlib.py", 105, "__init__"),
]


def _reinstalled(stack: list, torch_prefix: str, stdlib: str, shift: int) -> list:
    """The same stack under another install: other prefixes, torch's lines moved by ``shift``."""
    out = []
    for f, line, fn in stack:
        if "/site-packages/" in f:
            out.append((torch_prefix + f.split("/site-packages/", 1)[1], line + shift, fn))
        elif "/lib/python3.11/" in f:
            out.append((stdlib + f.rsplit("/", 1)[1], line, fn))
        else:
            out.append(("/home/alice/bench/" + f.rsplit("/", 1)[1], line, fn))
    return out


def test_a_break_inside_the_stdlib_is_keyed_by_the_user_line_that_led_there() -> None:
    pick = pick_frames(DDP_STACK)
    assert (pick.frame_file, pick.frame_line, pick.frame_func) == (
        "/work/main/sample_traces/generate.py",
        273,
        "scenario_ddp_2rank",
    )
    assert (pick.lib_file, pick.lib_func, pick.lib_line) == (
        "<stdlib>/contextlib.py",
        "__init__",
        105,
    )
    other = pick_frames(
        _reinstalled(
            DDP_STACK,
            "/opt/torch/.venv/lib/python3.12/site-packages/",
            "/usr/lib/python3.12/",
            -191,
        )
    )
    assert (other.lib_file, other.lib_func) == (pick.lib_file, pick.lib_func)
    assert other.frame_line == pick.frame_line and other.frame_file.endswith("/generate.py")


def test_a_break_in_user_code_has_no_library_frame_and_an_empty_stack_uses_the_location() -> None:
    pick = pick_frames(DDP_STACK[:2])
    assert pick.frame_line == 273 and pick.lib_file is None
    loc = pick_frames([], ("/usr/lib/python3.12/contextlib.py", 105))
    assert (
        loc.frame_file is None and loc.lib_file == "<stdlib>/contextlib.py" and loc.lib_func is None
    )
    assert pick_frames([]) == pick_frames([], (None, None))


def test_frame_text_round_trip_keeps_windows_drives() -> None:
    assert parse_frame_text("C:\\proj\\train.py:12 in forward") == (
        "C:\\proj\\train.py",
        12,
        "forward",
    )
    assert parse_frame_text("/a/b.py:3") == ("/a/b.py", 3, None)
    assert parse_frame_text("no line here") is None


# ------------------------------------------------------------------ the run's root


def test_common_dir_is_the_longest_common_folder() -> None:
    dirs = sorted(
        user_dir(p) for p in ["/home/alice/bench/scenarios.py", "/home/alice/bench/models/gpt.py"]
    )
    assert common_dir(dirs[0], dirs[-1]) == "/home/alice/bench/"
    assert (
        common_dir("/home/alice/bench/", "/home/alice/benchmark/") == "/home/alice/"
    )  # not /home/alice/bench
    assert common_dir("/home/a/", "/tmp/b/") is None  # only "/" in common: no root
    assert common_dir("C:/x/", "C:/y/") is None
    assert user_dir("scenarios.py") is None  # relative paths have no folder to share


# ------------------------------------------------------------------ break keys and masking


def test_break_key_is_the_gb_id_else_the_masked_type() -> None:
    assert break_key("gb0007", "Attempted to call function marked as skipped") == "gb0007"
    old = "call_function BuiltinVariable(print) [ConstantVariable(str)] {} at 0x7f3a2c1b9d30"
    assert (
        break_key(None, old)
        == "call_function BuiltinVariable(print) [ConstantVariable(str)] {} at 0x…"
    )
    assert break_key(None, None) is None


MASKED = [
    ("backend='bad_backend' raised:\nRuntimeError: synthetic backend failure for testing",
     "backend='bad_backend' raised: RuntimeError: synthetic backend failure for testing"),  # F
    ("Cached backend: _TorchCompileWrapper(compiler='eager') (id=0x7f06cb16ec10)",
     "Cached backend: _TorchCompileWrapper(compiler='eager') (id=0x…)"),
    ("could not open /tmp/torchinductor_root/ab/cabcdef.py: no such file", "could not open <tmp>: no such file"),
    ("size 16 vs 8 at [0/1]", "size N vs N at [F/C]"),
    ("error in /opt/conda/lib/python3.11/site-packages/torch/_inductor/lowering.py line 12",
     "error in torch/_inductor/lowering.py line N"),
    ("key 9f86d081884c7d659a2feaa0c55ad015 missing", "key <id> missing"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "masked"), MASKED)
def test_mask(text: str, masked: str) -> None:
    assert mask(text) == masked


@given(st.text(max_size=300))
@settings(max_examples=300, deadline=None)
def test_identity_functions_never_raise(text: str) -> None:
    from pt2logs.analysis.failures import parse_wont_convert, traceback_parts
    from pt2logs.analysis.guard_parts import guard_parts

    pid = classify_path(text)
    assert pid.kind in (None, "user", "library", "stdlib", "other")
    (
        mask(text),
        break_key(None, text),
        guard_parts(text),
        traceback_parts(text),
        parse_wont_convert(text),
    )
    pick_frames([(text, 1, text)], (text, None))

"""Failed compiles: exception type, full message, masked key, user frame and stack, on real failures.

The GPU fixture (torch 2.11 / Python 3.12) and sample_traces (torch 2.13 / Python 3.11) both run a
backend that raises ``RuntimeError``; tlparse's comp_failure.log (a torch source checkout) too.
"""

from __future__ import annotations

import json
import re

from tests.analysis.fixture_text import records
from tests.conftest import fixture_path

from pt2logs.analysis.failures import (
    failure_key,
    from_metrics,
    parse_wont_convert,
    short_type,
    traceback_parts,
)


def _failed_metrics(path) -> list[dict]:
    out = []
    for env, _ in records(path):
        m = env.get("compilation_metrics")
        if isinstance(m, dict) and m.get("fail_type"):
            out.append(m)
    return out


def test_the_gpu_backend_failure_has_its_exception_user_frame_and_stack() -> None:
    (trace,) = fixture_path("gpu", "compile_failure", "trace").glob("*.log")
    (m,) = _failed_metrics(trace)
    cols = from_metrics(m)
    assert cols["exc_type"] == "BackendCompilerFailed"
    assert (
        cols["exc_message"]
        == "backend='bad_backend' raised:\nRuntimeError: synthetic backend failure for testing"
    )
    assert (
        cols["failure_key"]
        == "BackendCompilerFailed: backend='bad_backend' raised: RuntimeError: synthetic backend failure for testing"
    )
    # torch gives no fail_user_frame here: the user code that raised is the innermost user frame of the traceback
    assert (cols["frame_file"], cols["frame_line"], cols["frame_func"]) == (
        "/home/alice/bench/scenarios.py",
        113,
        "bad_backend",
    )
    assert cols["stack"][0].startswith(
        "/opt/torch/.venv/lib/python3.12/site-packages/torch/_dynamo/convert_frame.py:"
    )
    assert cols["stack"][-1] == "/home/alice/bench/scenarios.py:113 in bad_backend"


def test_the_same_failure_text_under_the_text_log_gives_the_same_key() -> None:
    path = fixture_path("gpu", "compile_failure", "torch_logs.txt")
    prefix = re.compile(r"^W\d{4} [\d:.]+ +\d+ torch/_dynamo/convert_frame.py:\d+\] ?")
    body = "\n".join(prefix.sub("", ln) for ln in path.read_text().split("\n") if prefix.match(ln))
    assert body.count("WON'T CONVERT") == 1
    row = parse_wont_convert(body)
    assert row["co_name"] == "<lambda>" and row["co_firstlineno"] == 116
    assert row["fail_type"] == row["exc_type"] == "BackendCompilerFailed"
    assert (
        row["failure_key"]
        == "BackendCompilerFailed: backend='bad_backend' raised: RuntimeError: synthetic backend failure for testing"
    )
    assert (row["frame_file"], row["frame_line"]) == ("/home/alice/bench/scenarios.py", 113)
    assert parse_wont_convert("Graph break in user code at x.py:1") is None


def test_a_source_checkout_failure_has_its_user_frame_in_the_test_file() -> None:
    (m,) = _failed_metrics(fixture_path("tlparse", "comp_failure.log"))
    cols = from_metrics(m)
    assert cols["exc_type"] == "BackendCompilerFailed"
    assert cols["frame_file"].endswith(
        "/test/dynamo/test_misc.py"
    )  # torch/_dynamo/... of the checkout is library code


def test_keys_agree_across_installs_and_mask_what_varies() -> None:
    a = failure_key(
        "torch._dynamo.exc.Unsupported",
        "Tensor at 0x7f3a2c1b9d30 of size 16 in /opt/conda/lib/python3.11/site-packages/torch/x.py",
    )
    b = failure_key(
        "Unsupported",
        "Tensor at 0x55d1c0ffee00 of size 32 in C:\\env\\Lib\\site-packages\\torch\\x.py",
    )
    assert a == b == "Unsupported: Tensor at 0x… of size N in torch/x.py"
    assert (
        short_type("<class 'torch._dynamo.exc.TensorifyScalarRestartAnalysis'>")
        == "TensorifyScalarRestartAnalysis"
    )
    assert failure_key(None, None) is None


def test_traceback_parts_reads_the_last_traceback() -> None:
    text = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/a/x.py", line 1, in f',
            "ValueError: first",
            "",
            "The above exception was the direct cause of the following exception:",
            "",
            "Traceback (most recent call last):",
            '  File "/a/y.py", line 2, in g',
            "    g()",
            "torch._dynamo.exc.InternalTorchDynamoError: second",
            "  detail",
            "",
            "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace",
        ]
    )
    frames, exc, msg = traceback_parts(text)
    assert frames == [("/a/y.py", 2, "g")] and exc == "torch._dynamo.exc.InternalTorchDynamoError"
    assert msg == "second\n  detail"
    assert traceback_parts("no traceback") == ([], None, None)


def test_every_failed_metrics_record_of_the_fixtures_gets_a_key() -> None:
    found = 0
    for path in [
        *fixture_path("gpu").glob("*/trace/*.log"),
        *fixture_path("tlparse").glob("*.log"),
    ]:
        for m in _failed_metrics(path):
            cols = from_metrics(m)
            assert cols["exc_type"] and cols["failure_key"].startswith(cols["exc_type"] + ": "), (
                path,
                m["fail_type"],
            )
            assert json.dumps(cols)  # plain data
            found += 1
    assert found >= 3

"""Tracebacks behind prefixes and Dynamo's errors (issue 33 item 6), written as the programs print them:

* vLLM's logger: ``logger.exception("EngineCore failed to start.")`` (vllm/v1/engine/core.py) through vLLM's
  ``NewLineFormatter`` (vllm/logging_utils/formatter.py: every line of the message and of its traceback
  behind the prefix, joined with ``\\r\\n``), then the exception re-raised to Python's excepthook;
* a worker's stream prefix (``decorate_logs`` / ``_add_prefix``, vllm/utils: ``\\x1b[1;36m(EngineCore_DP0
  pid=2507)\\x1b[0;0m `` before every line it writes);
* a real ``torch.compile`` error (torch 2.13 on this machine): ``torch._dynamo.exc.Unsupported`` with its
  ``from user code:`` section, and ``FailOnRecompileLimitHit`` on its own line.
"""

from __future__ import annotations

import logging
import sys
import traceback

import pytest
from tests.readers.test_outcome_lines import evidence

VLLM_FMT = "%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s"  # vllm/logger.py _FORMAT, 0.8 - 0.10
MSG = "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."


class NewLineFormatter(logging.Formatter):
    """vllm/logging_utils/formatter.py (0.6 - 0.10), as released."""

    def format(self, record):
        msg = logging.Formatter.format(self, record)
        if record.message != "":
            parts = msg.split(record.message)
            msg = msg.replace("\n", "\r\n" + parts[0])
        return msg


def _determine_available_memory():
    raise ValueError(MSG)


def _vllm_exception_log() -> str:
    f = NewLineFormatter(VLLM_FMT, "%m-%d %H:%M:%S")
    try:
        _determine_available_memory()
    except ValueError:
        rec = logging.LogRecord(
            "vllm.v1.engine.core",
            logging.ERROR,
            "/x/vllm/v1/engine/core.py",
            708,
            "EngineCore failed to start.",
            (),
            sys.exc_info(),
        )
        return f.format(rec)
    raise AssertionError


def _raw_traceback() -> str:
    try:
        _determine_available_memory()
    except ValueError:
        return traceback.format_exc()
    raise AssertionError


def _decorate(text: str, name: str = "EngineCore_DP0", pid: int = 2507) -> str:
    """vllm/utils _add_prefix: the cyan process prefix before every line written."""
    prefix = f"\x1b[1;36m({name} pid={pid})\x1b[0;0m "
    return "".join(prefix + ln for ln in text.splitlines(keepends=True))


@pytest.mark.parametrize("shape", ["vllm_logger", "vllm_logger_decorated", "decorated_raw"])
def test_a_traceback_behind_a_prefix_is_one_exception_with_its_type_and_message(shape):
    if shape == "vllm_logger":
        text = _vllm_exception_log() + "\n"
    elif shape == "vllm_logger_decorated":
        text = _decorate(_vllm_exception_log() + "\n")
    else:
        text = _decorate(_raw_traceback())
    (ev,) = evidence(text)
    assert (ev["kind"], ev["means"], ev["exc_type"], ev["exc_message"]) == (
        "exception",
        "failed",
        "ValueError",
        MSG,
    )
    assert ev["location"].endswith("in _determine_available_memory")
    assert ev["n_lines"] >= 4


def test_a_dynamo_error_points_at_the_user_frame():
    import torch  # a real torch.compile error of torch 2.13, printed by Python

    def user_fn(x):
        return torch.ops.aten.nonexistent_op_for_test(x)

    try:
        torch.compile(user_fn, backend="eager", fullgraph=True)(torch.ones(2))
    except Exception:
        text = traceback.format_exc()
    else:
        pytest.skip("torch compiled it")
    assert "from user code:" in text
    ev = evidence(text)[
        -1
    ]  # (the chained AttributeError before it is a row of its own, as any traceback)
    assert ev["exc_type"].startswith("torch._dynamo.exc.")
    assert __file__ in ev["location"] and ev["location"].endswith("in user_fn")


def test_fail_on_recompile_limit_hit_on_its_own_line():
    # torch/_dynamo/exc.py class FailOnRecompileLimitHit; convert_frame.py raises it with
    # "{limit_type} reached with fullgraph=True. Excessive recompilations can degrade ..." (torch 2.13)
    line = (
        "torch._dynamo.exc.FailOnRecompileLimitHit: recompile_limit reached with fullgraph=True. Excessive recompilations "
        "can degrade performance due to the compilation overhead of each recompilation."
    )
    (ev,) = evidence("step 3\n" + line + "\n")
    assert (ev["kind"], ev["means"], ev["exc_type"]) == (
        "exception",
        "failed",
        "torch._dynamo.exc.FailOnRecompileLimitHit",
    )
    assert ev["exc_message"].startswith("recompile_limit reached with fullgraph=True")

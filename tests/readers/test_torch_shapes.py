"""torch's messages without torch's glog prefix (issue 33 item 4): Python logging reconfigured
(``logging.basicConfig``-style formats), the prefix elided by a paste, a bare ``[0/1] [__recompiles]``,
torch 2.0's ``[WARNING] Graph break: …``. Real captures of fixtures/torch_logs and fixtures/gpu are rewritten
line by line into each shape, as the formatter that prints it writes it, and must give the rows the glog
capture gives; foreign text stays foreign.
"""

from __future__ import annotations

import re

import pytest
from tests.conftest import fixture_path
from tests.readers.test_torch_logs import read

from pt2logs.readers import detect
from pt2logs.readers.lines.torch_logs import GLOG

CAPTURES = [
    ("torch_logs", "recompiles.txt"),
    ("torch_logs", "graph_breaks.txt"),
    ("torch_logs", "recompiles_verbose.txt"),
    ("torch_logs", "verbose_graph_breaks.txt"),
    ("gpu", "graph_breaks/torch_logs.txt"),
    ("gpu", "recompile_causes/torch_logs.txt"),
    ("gpu", "compile_failure/torch_logs.txt"),
    ("torch_logs", "guards.txt"),
]
_LEVEL = {"V": "DEBUG", "I": "INFO", "W": "WARNING", "E": "ERROR", "C": "CRITICAL"}


def _logger(m: re.Match) -> str:
    path = m.group("path")
    mod = path[path.index("torch/") :].removesuffix(".py").replace("/", ".")
    return mod + (f".__{m.group('artifact')}" if m.group("artifact") else "")


def rewrite(text: str, shape: str) -> str:
    """Each glog line as ``shape`` prints it. ``logging`` and ``basic``: a plain ``logging.Formatter`` on the
    handler (``"%(asctime)s - %(name)s - %(levelname)s - %(message)s"`` / ``logging.BASIC_FORMAT``): the
    prefix on a message's first line only, no compile id (torch's formatter adds that); ``elided``: the prefix
    cut before ``torch/``; ``bare``: only ``[cid] [__artifact]``."""
    out, prev = [], None
    for line in text.splitlines():
        m = GLOG.match(line)
        if m is None:
            out.append(line)
            prev = None
            continue
        msg = m.group("msg") or ""
        head = line[: m.start("msg")] if m.group("msg") is not None else line
        first = head != prev
        prev = head
        mm, dd, t = m.group("mmdd")[:2], m.group("mmdd")[2:], m.group("time")
        if shape == "logging":
            out.append(
                f"2026-{mm}-{dd} {t[:8]},{t[9:12]} - {_logger(m)} - {_LEVEL[m.group('level')]} - {msg}"
                if first
                else msg
            )
        elif shape == "basic":
            out.append(f"{_LEVEL[m.group('level')]}:{_logger(m)}:{msg}" if first else msg)
        elif shape == "elided":
            path = m.group("path")
            out.append(".../" + line[m.start("path") + path.index("torch/") :])
        elif shape == "bare":
            out.append(line[m.end("lineno") + 2 :] if m.group("trace_id") else msg)
    return "\n".join(out) + "\n"


def counts(t: dict) -> tuple:
    rc = t.get("recompiles", [])
    gb = t.get("graph_breaks", [])
    return (
        len(rc),
        sum(r["is_limit_hit"] for r in rc),
        sorted(r["reason"] or "" for r in rc),
        sum(g["occurrences"] for g in gb),
        sorted((g["gb_type"] or "", g["user_lineno"] or 0) for g in gb),
        len(t.get("kernels", [])),
        len(t.get("failures", [])),
        sorted((g["guard_count"], g["n_guard_lines"], g["guards"]) for g in t.get("guards", [])),
    )


@pytest.mark.parametrize("shape", ["logging", "basic", "elided", "bare"])
@pytest.mark.parametrize("fixture", CAPTURES, ids=lambda f: "/".join(f))
def test_reshaped_capture_gives_the_glog_rows(fixture, shape):
    raw = fixture_path(*fixture).read_text()
    base, _ = read(raw)
    shaped = rewrite(raw, shape)
    assert detect(shaped.encode()[:65536], "stderr.txt").name == "torch_logs"
    t, stats = read(shaped)
    assert stats.errors == 0
    want = counts(base)
    if shape in ("logging", "basic"):
        # a plain Formatter prints no compile id: each limit warning is its own row instead of marking the
        # recompile of its compile id, so compare recompiles less limit hits, and the limit hits
        got = counts(t)
        assert got[3:] == want[3:]
        assert got[1] == want[1]
        assert len([r for r in t.get("recompiles", []) if not r["is_limit_hit"]]) == len(
            [r for r in base.get("recompiles", []) if not r["is_limit_hit"]]
        )
    elif shape == "bare":
        # a message torch printed with no compile id (WON'T CONVERT) has no prefix left at all in this shape
        assert counts(t)[:6] == want[:6] and counts(t)[7] == want[7]
    else:
        assert counts(t) == want
    assert want[0] + want[3] + want[5] + want[6] + len(want[7]) > 0


def test_logging_shape_keeps_level_logger_and_time():
    text = (
        "2026-11-26 17:36:29,939 - torch._dynamo.guards.__recompiles - DEBUG - Recompiling function forward in /w/m.py:30\n"
        "    triggered by the following guard failure(s):\n"
        "    - 0/0: tensor 'x' size mismatch at index 0. expected 4, actual 8\n"
        "step 1 done\n"
    )
    t, stats = read(text)
    (rc,) = t["recompiles"]
    assert (rc["co_name"], rc["reason"], rc["cause"]) == (
        "forward",
        "tensor 'x' size mismatch at index 0. expected 4, actual 8",
        "shape_mismatch",
    )
    msg = next(r for r in t["log_lines"] if not r["foreign"])
    assert (msg["level"], msg["pathname"], msg["artifact"], msg["n_lines"]) == (
        "V",
        "torch._dynamo.guards",
        "recompiles",
        3,
    )
    assert msg["ts"].isoformat().startswith("2026-11-26T17:36:29.939")
    assert any(r["foreign"] and r["message"] == "step 1 done" for r in t["log_lines"])


def test_issue_shapes_each_give_their_row():
    """The lines of issue 33 item 4, as each program prints them."""
    # pytorch/pytorch#128071: the glog prefix elided to ".../"
    t, _ = read(fixture_path("torch_logs", "wild_pastes", "pytorch_pytorch_128071.txt").read_text())
    (rc,) = t["recompiles"]
    assert rc["compile_id"] == "16/8" and rc["co_name"] == "torch_dynamo_resume_in_forward_at_172"
    # a bare compile id and artifact tag
    t, _ = read(
        "[0/1] [__recompiles] Recompiling function f in /w/m.py:3\n"
        "[0/1] [__recompiles]     triggered by the following guard failure(s):\n"
        "[0/1] [__recompiles]     - 0/0: L['n'] == 1\n"
    )
    (rc,) = t["recompiles"]
    assert (rc["compile_id"], rc["prev_compile_id"], rc["co_name"]) == ("0/1", "0/0", "f")
    # torch 2.0 (_dynamo/symbolic_convert.py: log.warning(f"Graph break: {excp} from user code at {user_stack_formatted}")),
    # its "[date] logger: [LEVEL]" prefix cut to the level
    t, _ = read(
        "[WARNING] Graph break: call_function BuiltinVariable(iadd) [TensorVariable(), ConstantVariable(int)] {} "
        'from user code at   File "/w/m.py", line 12, in forward\n'
        "    x += 1\n"
    )
    (gb,) = t["graph_breaks"]
    assert gb["gb_type"].startswith("call_function BuiltinVariable") and gb["user_lineno"] == 12


@pytest.mark.parametrize(
    "text",
    [
        "INFO:torch.distributed.run:Using nproc_per_node=2\nWARNING:torch.distributed.run:\n*****\n",
        "2026-06-03 10:01:02 | vllm.compilation | 140 | INFO : Directly load the compiled graph\n",
        "[1/2] building model\n[2/2] done\n",
        "We use torch._dynamo for compiling - DEBUG - yes\n",
        "Epoch [0/1] loss 0.3\n[0/1] [ok] fine\n",
    ],
)
def test_foreign_text_is_still_refused(text):
    f = detect(text.encode(), "stderr.txt")
    assert f is None or f.name != "torch_logs"

"""TORCH_LOGS=guards → ``guards`` rows (issue 33 item 5), and the recompile limit's warning with its first line
cut (item 6). Real captures: fixtures/torch_logs/guards.txt (torch 2.13, the guard manager's tree), the trace of
fixtures/torch_logs/trace_one_per_kind.log (its ``dynamo_cpp_guards_str``), the list layout as torch 2.1-2.4's
``compile_check_fn`` prints it (``guards_log.debug("GUARDS:")`` then ``guards_log.debug("%s", f"{code:<60}{extra}")``
per guard), fixtures/torch_logs/wild_pastes/huggingface_transformers_36484.txt.
"""

from __future__ import annotations

import re

from tests.conftest import fixture_path
from tests.readers.test_torch_logs import read
from tests.readers.test_torch_trace import read as read_trace_text

from pt2logs.readers.lines.log_prefixes import GLOG

_GUARD = re.compile(r"^[| ]*\+- (?!GuardManager)[A-Za-z_]+: ", re.M)


def test_one_guards_row_per_compile_from_the_tree():
    text = fixture_path("torch_logs", "guards.txt").read_text()
    t, stats = read(text)
    rows = sorted(t["guards"], key=lambda r: r["line_no"])
    headers = [
        (i, GLOG.match(ln))
        for i, ln in enumerate(text.splitlines(), 1)
        if ln.endswith("[__guards] GUARDS:")
    ]
    assert [r["line_no"] for r in rows] == [i for i, _ in headers]
    assert [r["compile_id"] for r in rows] == [
        m.group("trace_id").split("_")[0] for _, m in headers
    ]
    for r in rows:
        assert r["source"] == "torch_logs" and r["guards"].lstrip("\n").startswith(
            "TREE_GUARD_MANAGER:\n+- RootGuardManager"
        )
        assert r["guard_count"] == len(_GUARD.findall(r["guards"])) > 0
        assert "Guard eval latency" not in r["guards"] and "shape guard function" not in r["guards"]
    assert stats.errors == 0


def test_the_text_row_equals_the_trace_row():
    """The trace's dynamo_cpp_guards_str payload printed as TORCH_LOGS prints it (guards.py: GUARDS:, then the
    tree, each line behind the prefix) gives the same guards text and count."""
    trace, _ = read_trace_text(fixture_path("torch_logs", "trace_one_per_kind.log").read_bytes())
    want = next(r for r in trace["guards"] if r["guards"])
    p = "V1122 09:45:09.102000 15905 torch/_dynamo/guards.py:{}] [0/0] [__guards] "
    lines = [p.format(4786) + "GUARDS:"] + [
        p.format(4483) + ln for ln in want["guards"].split("\n")
    ]
    t, _ = read("\n".join(lines) + "\n")
    (got,) = t["guards"]
    assert got["guards"] == want["guards"]
    assert (got["n_guard_lines"], got["compile_id"]) == (want["n_guard_lines"], "0/0")
    assert got["guard_count"] == len(_GUARD.findall(want["guards"]))


def test_the_list_layout_of_torch_2_1_to_2_4():
    p = "[rank1]:V0301 00:23:46.119000 785666 torch/_dynamo/guards.py:1094] [0/0] [__guards] "
    guards = [
        "___check_type_id(L['x'], 7629152)",
        "hasattr(L['x'], '_dynamo_dynamic_indices') == False",
        "___check_obj_id(L['self'].training, 7685824)",
    ]
    lines = [p + "GUARDS:"] + [p + f"{g:<60}  # return x + 1  # m.py:3 in f" for g in guards]
    lines += [p.replace("[0/0]", "[0/1]") + "GUARDS:", p.replace("[0/0]", "[0/1]") + guards[0]]
    t, _ = read("\n".join(lines) + "\n")
    rows = sorted(t["guards"], key=lambda r: r["line_no"])
    assert [(r["compile_id"], r["rank"], r["guard_count"]) for r in rows] == [
        ("0/0", 1, 3),
        ("0/1", 1, 1),
    ]


def test_a_recompile_limit_warning_without_its_first_line_is_a_limit_hit():
    # huggingface/transformers#36484: the paste starts at "   function: 'forward' (...)"
    t, _ = read(
        fixture_path("torch_logs", "wild_pastes", "huggingface_transformers_36484.txt").read_text()
    )
    (rc,) = t["recompiles"]
    assert (rc["rank"], rc["compile_id"], rc["is_limit_hit"], rc["co_name"]) == (
        0,
        "9/8",
        True,
        "forward",
    )
    # another rank's partial block in an interleaved capture: rank 6's last reason only
    line = (
        "[rank6]:W1126 17:36:29.939000 2507 torch/_dynamo/convert_frame.py:1031] [1/64]    last reason: 1/0: "
        "tensor 'L['images']' size mismatch at index 0. expected 3, actual 5"
    )
    t, _ = read(line + "\n")
    (rc,) = t["recompiles"]
    assert (
        rc["rank"],
        rc["compile_id"],
        rc["is_limit_hit"],
        rc["prev_compile_id"],
        rc["cause"],
    ) == (6, "1/64", True, "1/0", "recompile_limit_hit")
    assert rc["guard_subject"] == "images"

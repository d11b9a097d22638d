"""TORCH_LOGS text as each torch version prints it (lines written as the real ones look).

* torch 2.0: ``[2023-04-13 21:42:57,808] torch._dynamo.x.__recompiles: [DEBUG] msg``, continuation lines
  indented without a prefix;
* torch 2.1-2.3 (``TorchLogsFormatter``): ``{rankprefix}[{asctime}]{traceid} {name}: [{levelname}]`` repeated
  on every line of a message, e.g. ``[rank0]:[2023-08-23 20:16:32,833] [12/21] torch._dynamo...`` (the
  seamless_communication blog's graph break, a diffusers issue's config-cache note);
* torch 2.4+: the glog prefix, sometimes behind another program's own prefix (a wrapper's time stamp).
"""

from __future__ import annotations

import datetime as dt

from pt2logs.readers import detect
from pt2logs.readers.kit import FileContext

MTIME = dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc).timestamp()


def read(text: str) -> dict[str, list[dict]]:
    data = text.encode()
    fmt = detect(data, "stderr.txt")
    assert fmt is not None and fmt.name == "torch_logs", fmt
    out: dict[str, list[dict]] = {}
    for name, batch in fmt.read(
        [data[i : i + 50] for i in range(0, len(data), 50)],
        FileContext(file="f", path="/f", mtime=MTIME),
    ):
        out.setdefault(name, []).extend(batch.to_pylist())
    return out


def test_torch_2_1_repeats_the_prefix_on_every_line_of_one_recompile() -> None:
    p = "[2023-11-06 14:54:54,691] torch._dynamo.guards.__recompiles: [DEBUG]"
    out = read(
        f"{p} Recompiling function forward in /home/alice/model.py:30\n"
        f"{p}     triggered by the following guard failure(s):\n"
        f"{p}     - tensor 'L['x']' size mismatch at index 0. expected 25, actual 26\n"
        "Epoch 1 done\n"
    )
    (rc,) = out["recompiles"]
    assert (rc["co_name"], rc["co_filename"], rc["co_firstlineno"]) == (
        "forward",
        "/home/alice/model.py",
        30,
    )
    assert rc["cause"] == "shape_mismatch" and "expected 25, actual 26" in rc["reason"]
    assert [(r["n_lines"], r["foreign"]) for r in out["log_lines"]] == [(3, False), (1, True)]


def test_rank_and_compile_id_in_the_old_prefix() -> None:
    p = "[rank0]:[2023-08-23 20:16:32,833] [12/21] torch._dynamo.symbolic_convert.__graph_breaks: [DEBUG]"
    out = read(
        f"{p} Graph break: setattr(UserDefinedObjectVariable) <function Module.__setattr__ at 0x7fac8f483c10> from user code at:\n"
        f'{p}   File "/home/alice/vocoder.py", line 49, in forward\n'
        f"{p}     return self.code_generator(x, dur_prediction)\n"
        "[2024-02-06 10:32:24,334] [0/0] torch._dynamo.symbolic_convert: [INFO] Step 1: torchdynamo start tracing f /home/alice/a.py:3\n"
    )
    (gb,) = out["graph_breaks"]
    assert (gb["compile_id"], gb["rank"], gb["user_filename"], gb["user_lineno"]) == (
        "12/21",
        0,
        "/home/alice/vocoder.py",
        49,
    )
    assert "setattr" in gb["reason"]
    info = [r for r in out["log_lines"] if r["artifact"] is None and not r["foreign"]]
    assert [(r["compile_id"], r["level"]) for r in info] == [("0/0", "I")]


def test_the_config_cache_note_is_not_a_recompile() -> None:
    p = "[2023-12-07 16:46:33,122] torch._dynamo.convert_frame.__recompiles: [DEBUG]"
    out = read(
        f"{p} Current config does not match config saved when compiling\n"
        f"{p} Saved hash: 6013f71, Current hash: e27661e\n"
        f"{p} Restoring saved config.\n"
        f"{p} * assume_static_by_default=False (prev: True)\n"
    )
    assert "recompiles" not in out
    assert [r["artifact"] for r in out["log_lines"]] == ["recompiles"]


def test_a_glog_line_behind_a_wrappers_prefix_keeps_its_function() -> None:
    p = "[2025-08-12 03:18:23.088] V0812 03:18:23.088000 9120 torch\\_dynamo\\guards.py:3508] [6/2] [__recompiles]"
    out = read(
        f"{p} Recompiling function forward in C:\\Users\\alice\\proj\\model.py:221\n"
        f"{p}     triggered by the following guard failure(s):\n"
        f"{p}     - 6/1: L['offset'] == 3\n"
    )
    (rc,) = out["recompiles"]
    assert (rc["co_name"], rc["co_filename"], rc["co_firstlineno"]) == (
        "forward",
        "C:\\Users\\alice\\proj\\model.py",
        221,
    )
    assert (
        rc["compile_id"] == "6/2"
        and rc["prev_compile_id"] == "6/1"
        and rc["reason"] == "L['offset'] == 3"
    )


def test_a_fragment_without_its_header_still_has_reasons() -> None:
    p = "V1122 09:44:39.380000 15437 torch/_dynamo/guards.py:5396] [0/3] [__recompiles]"
    out = read(
        f"{p}     - 0/2: ___check_obj_id(L['self'].processor, 140462015041104)\n"
        f"{p}     - 0/1: ___check_obj_id(L['self'].processor, 140462015040240)\n"
    )
    (rc,) = out["recompiles"]
    assert rc["prev_compile_id"] == "0/2" and rc["cause"] != "other" and len(rc["all_reasons"]) == 2

"""Secrets stay out of the warehouse and out of error messages (pt2logs run, the CLI)."""

from __future__ import annotations

import sys
from pathlib import Path

from click.testing import CliRunner

import pt2logs
from pt2logs.cli import main
from pt2logs.redact import LineRedactor, redact


def test_obvious_secrets_are_masked_and_ordinary_words_are_not() -> None:
    cases = {
        "python train.py --token=abc123 --hf-token xyz --tokenizer-mode auto --max-tokens 5":
            "python train.py --token=*** --hf-token *** --tokenizer-mode auto --max-tokens 5",
        "HF_TOKEN=hf_abc AWS_SECRET_ACCESS_KEY='ab/cd' max_num_batched_tokens=8192":
            "HF_TOKEN=*** AWS_SECRET_ACCESS_KEY=*** max_num_batched_tokens=8192",
        "s3://AKIAXXXX:sEcReT@bucket/wh and https://u:pw@h.com/x": "s3://AKIAXXXX:***@bucket/wh and https://u:***@h.com/x",
        'Invalid bucket name "KEY:supersecret@bucket"': 'Invalid bucket name "KEY:***@bucket"',
        "Authorization: Bearer eyJhbGciOi": "Authorization: Bearer ***",
        "author: Alice, device cuda:0, tensor x@y": "author: Alice, device cuda:0, tensor x@y",
        "push with ghp_abcdefghijklmnopqrstuvwxyz0123456789AB": "push with ***",
    }
    for text, want in cases.items():
        assert redact(text) == want


def test_a_stream_is_redacted_across_chunk_boundaries() -> None:
    data = b"ok line\nexport HF_TOKEN=hf_secretvalue123\nlast --password hunter2"
    r = LineRedactor()
    out = b"".join(r.feed(data[i: i + 5]) for i in range(0, len(data), 5)) + r.flush()
    assert out == b"ok line\nexport HF_TOKEN=***\nlast --password ***"


def test_pt2logs_run_keeps_no_secret_but_shows_the_output(tmp_path: Path) -> None:
    glog = "V1122 09:44:39.380000 15437 torch/_dynamo/guards.py:5396] [0/1] [__recompiles] Recompiling function f in /w/m.py:3"
    prog = (f"import sys; sys.stderr.write({glog!r} + '\\n'); "
            "sys.stderr.write('using HF_TOKEN=hf_sEcReTvAlUe123 and https://me:pw123@example.com\\n')")
    wh = tmp_path / "wh"
    res = CliRunner().invoke(main, ["run", "-w", str(wh), "--", sys.executable, "-c", prog, "--api-key=k3y"])
    assert res.exit_code == 0, res.output
    assert "hf_sEcReTvAlUe123" in res.output  # the live echo is the program's own output
    con = pt2logs.connect(str(wh))
    (command,) = con.execute("SELECT command FROM runs").fetchone()
    assert command.endswith("--api-key=***") and "k3y" not in command
    text = "\n".join(m for (m,) in con.execute("SELECT message FROM log_lines").fetchall())
    assert "HF_TOKEN=***" in text and "me:***@example.com" in text
    assert "sEcReT" not in text and "pw123" not in text
    kept = b"".join(p.read_bytes() for p in (wh.parent).rglob("torch_logs.txt"))
    assert b"sEcReT" not in kept


def test_an_unexpected_failure_is_one_line_with_credentials_masked(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["query", "SELECT 1", "-w", "s3://AKIAKEY:supersecret@no_such bucket/wh"])
    assert res.exit_code == 1
    assert "supersecret" not in res.output and "Traceback" not in res.output
    assert res.output.startswith("Error: ") and "PT2LOGS_DEBUG=1" in res.output

"""Secrets stay out of the warehouse and out of error messages (pt2logs run, the CLI)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from click.testing import CliRunner

import pt2logs
from pt2logs.cli import main
from pt2logs.redaction.masking import Learnt, join
from pt2logs.redaction.redact import PREFILTER, LineRedactor, redact


def test_obvious_secrets_are_masked_and_ordinary_words_are_not() -> None:
    cases = {
        "python train.py --token=abc123 --hf-token xyz --tokenizer-mode auto --max-tokens 5": "python train.py --token=*** --hf-token *** --tokenizer-mode auto --max-tokens 5",
        "HF_TOKEN=hf_abc AWS_SECRET_ACCESS_KEY='ab/cd' max_num_batched_tokens=8192": "HF_TOKEN=*** AWS_SECRET_ACCESS_KEY=*** max_num_batched_tokens=8192",
        "s3://AKIAXXXX:sEcReT@bucket/wh and https://u:pw@h.com/x": "s3://AKIAXXXX:***@bucket/wh and https://u:***@h.com/x",
        'Invalid bucket name "KEY:supersecret@bucket"': 'Invalid bucket name "KEY:***@bucket"',
        "Authorization: Bearer eyJhbGciOi": "Authorization: Bearer ***",
        "author: Alice, device cuda:0, tensor x@y": "author: Alice, device cuda:0, tensor x@y",
        "push with ghp_abcdefghijklmnopqrstuvwxyz0123456789AB": "push with ***",
    }
    for text, want in cases.items():
        assert redact(text) == want


def test_the_shapes_secrets_are_written_in_are_masked() -> None:
    """issue 31: each of these kept its secret (or masked only the `=`) before."""
    cases = {
        "os.environ['TORCH_HUB_TOKEN'] = 'hubS3cret'": "os.environ['TORCH_HUB_TOKEN'] = ***",
        "if api_key == 'eqS3cret': pass": "if api_key == ***: pass",
        "s3://KEYID:wJalr/XUt+nF=EMI@bucket/wh": "s3://KEYID:***@bucket/wh",
        "login --auth=authS3cret ok": "login --auth=*** ok",
        '{"password": "jsonS3cret", "n": 1}': '{"password": ***, "n": 1}',
        "{'api_key': 'dictS3cret', 'lr': 0.1}": "{'api_key': ***, 'lr': 0.1}",
        "['train.py', '--token', 'argvS3cret']": "['train.py', '--token', '***']",
        "curl -u alice:curlS3cret https://x": "curl -u alice:*** https://x",
        "o?X-Amz-Date=1&X-Amz-Signature=abcS3cret&x=1": "o?X-Amz-Date=1&X-Amz-Signature=***&x=1",
        "wandb.login(key='0123456789abcdef0123456789abcdef01234567')": "wandb.login(key='***')",
        "--token\nnext line": "--token\nnext line",  # a value is on its own line
        # ordinary text stays
        "max_tokens: 5 tokenizer=auto author: Bob cache key=fabc123 L['x'].size()[0] == 8": "max_tokens: 5 tokenizer=auto author: Bob cache key=fabc123 L['x'].size()[0] == 8",
    }
    for text, want in cases.items():
        assert (
            redact(text) == want and redact(want) == want
        )  # masking twice (capture, then ingest) changes nothing
        assert text == want or re.search(PREFILTER, text)  # the prefilter never hides a shape


def test_learnt_secrets_are_masked_in_the_command_and_any_text() -> None:
    learnt = Learnt().learn_env(
        {"WANDB_API_KEY": "envS3cretValue", "PWD": "/home/x", "HF_HUB_OFFLINE": "1"}
    )
    learnt.learn_argv(
        [
            "train.py",
            "-p",
            "pS3cret'q",
            "--auth",
            "aS3cret",
            "mkdir",
            "-p",
            "/tmp/dir",
            "--lr",
            "0.1",
        ]
    )
    assert (
        join(learnt.argv(["train.py", "-p", "pS3cret'q", "--auth", "aS3cret", "--lr", "0.1"]))
        == "train.py -p *** --auth *** --lr 0.1"
    )
    # as torch's fx_graph_runnable writes a value (' becomes "), and as JSON writes it
    assert (
        learnt.text('a envS3cretValue b pS3cret"q c /tmp/dir /home/x')
        == "a *** b *** c /tmp/dir /home/x"
    )


def test_a_stream_is_redacted_across_chunk_boundaries() -> None:
    data = b"ok line\nexport HF_TOKEN=hf_secretvalue123\nlast --password hunter2"
    r = LineRedactor()
    out = b"".join(r.feed(data[i : i + 5]) for i in range(0, len(data), 5)) + r.flush()
    assert out == b"ok line\nexport HF_TOKEN=***\nlast --password ***"


def test_pt2logs_run_keeps_no_secret_but_shows_the_output(tmp_path: Path) -> None:
    glog = "V1122 09:44:39.380000 15437 torch/_dynamo/guards.py:5396] [0/1] [__recompiles] Recompiling function f in /w/m.py:3"
    prog = (
        f"import sys; sys.stderr.write({glog!r} + '\\n'); "
        "sys.stderr.write('using HF_TOKEN=hf_sEcReTvAlUe123 and https://me:pw123@example.com\\n')"
    )
    wh = tmp_path / "wh"
    res = CliRunner().invoke(
        main, ["run", "-w", str(wh), "--", sys.executable, "-c", prog, "--api-key=k3y"]
    )
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
    res = CliRunner().invoke(
        main, ["query", "SELECT 1", "-w", "s3://AKIAKEY:supersecret@no_such bucket/wh"]
    )
    assert res.exit_code == 1
    assert "supersecret" not in res.output and "Traceback" not in res.output
    assert res.output.startswith("Error: ") and "PT2LOGS_DEBUG=1" in res.output

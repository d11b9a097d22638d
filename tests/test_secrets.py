"""No planted secret survives anywhere pt2logs stores or prints (issue 31 item 6).

One real ``pt2logs run -- python work.py …`` (a small inductor compile: its TORCH_TRACE holds torch's
``fx_graph_runnable``, which dumps every TORCH* environment variable, and a guard on a secret string),
given secrets in its environment and arguments, printing them to stderr together with every secret
shape; a foreign TORCH_LOGS text and a damaged trace with the shapes ingested by ``pt2logs ingest``; a
re-ingest of the capture folder; the bundles. Then every column of every view is searched (through
DuckDB) for every planted value.
"""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tests.conftest import SAMPLES, needs_torch, torch_env

import pt2logs

pytestmark = [pytest.mark.slow, needs_torch]

WANDB = "0123456789abcdef0123456789abcdef01234567"
#: learnt: given to the run as environment variables and arguments, then printed plainly
ENV = {
    "TORCH_HUB_TOKEN": "TorchHubTok3nPlanted",
    "MY_SERVICE_API_KEY": "EnvApiKeyPlanted42",
    "DB_PASSWORD": "EnvPassw0rdPlanted",
}
ARGS = [
    "--token",
    "ArgTokenPlanted7",
    "-p",
    "ArgPassPlanted8",
    "--auth=ArgAuthPlanted9",
    "https://bob:Url/Pass+Planted10@example.com/x",
]
LEARNT = [
    *ENV.values(),
    "ArgTokenPlanted7",
    "ArgPassPlanted8",
    "ArgAuthPlanted9",
    "Url/Pass+Planted10",
]
#: shapes: secrets no one told pt2logs about, recognised by how they are written
SHAPES = {
    "api_key == 'EqKeyPlanted11'": "EqKeyPlanted11",
    '{"password": "JsonPassPlanted12", "n": 1}': "JsonPassPlanted12",
    "{'api_key': 'DictKeyPlanted13', 'lr': 0.1}": "DictKeyPlanted13",
    "argv: ['train.py', '--token', 'ArgvReprPlanted14']": "ArgvReprPlanted14",
    "curl -u alice:CurlPassPlanted15 https://x.example.com": "CurlPassPlanted15",
    "GET https://b.s3.amazonaws.com/o?X-Amz-Date=1&X-Amz-Signature=AmzSigPlanted16 failed": "AmzSigPlanted16",
    f"wandb.login(key='{WANDB}')": WANDB,
    "s3://AKIAPLANTEDKEY:AwsSecret/Plant+ed17@bucket/wh": "AwsSecret/Plant+ed17",
    "os.environ['TORCH_HUB_TOKEN'] = 'EnvReprPlanted18'": "EnvReprPlanted18",
    "login --auth=AuthShapePlanted19 done": "AuthShapePlanted19",
}
PLANTED = LEARNT + list(SHAPES.values())
SHAPES_LINE = " ".join(SHAPES)

WORK = textwrap.dedent("""
    import os, sys, torch
    secret = sys.argv[2]   # the --token value: a guard on it puts it in the trace
    def f(x, tag):
        return torch.mm(x, x) if tag == secret else x   # mm: an extern call, no C++ to build
    torch.compile(f)(torch.randn(4, 4), secret)
    for v in (*[os.environ[k] for k in %r], *sys.argv[1:]):
        print("PROG plain", v, file=sys.stderr)
    for line in %r:
        print("PROG", line, file=sys.stderr)
""")
LINE = "I1122 09:44:39.380000 15437 torch/_dynamo/x.py:1]"
GLOG = "V1122 09:44:39.380000 15437 torch/_dynamo/guards.py:5396] [0/1] [__recompiles] Recompiling function f in /w/m.py:3"


def _pt2logs(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pt2logs", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=cwd,
    )


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("secrets")
    (tmp / "work.py").write_text(WORK % (list(ENV), list(SHAPES)))
    wh = str(tmp / "wh")
    env = {
        **os.environ,
        **ENV,
        "TORCHINDUCTOR_CACHE_DIR": str(tmp / "cache"),
        "PYTHONPATH": str(Path(pt2logs.__file__).parents[1]),
        **torch_env(),
    }
    run = _pt2logs(
        "run",
        "-w",
        wh,
        "--name",
        "captured",
        "--",
        sys.executable,
        "work.py",
        *ARGS,
        env=env,
        cwd=tmp,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    (capture,) = (Path(wh) / "_captures").iterdir()
    # the shapes in a log pt2logs did not capture, and in a damaged trace (an ingest error's excerpt)
    foreign = tmp / "foreign"
    foreign.mkdir()
    (foreign / "torch_logs.txt").write_text(GLOG + "\n" + "".join(f"{LINE} {s}\n" for s in SHAPES))
    trace = gzip.decompress(next((SAMPLES / "recompiles" / "trace").iterdir()).read_bytes())
    bad = f'V1122 09:44:40.000000 15437 torch/_dynamo/x.py:1] {{"password": "JsonPassPlanted12", {SHAPES_LINE}\n'.encode()
    (foreign / "dedicated_log_torch_trace_x.log").write_bytes(trace + bad)
    ing = _pt2logs("ingest", str(foreign), "-w", wh, "--run-id", "foreign", env=env)
    assert ing.returncode in (0, 1), ing.stderr[-3000:]
    # the capture folder read again later, into another warehouse
    wh2 = str(tmp / "wh2")
    again = _pt2logs("ingest", str(capture), "-w", wh2, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    bundles = [_pt2logs("bundle", name, "-w", wh, env=env) for name in ("captured", "foreign")]
    return {"wh": wh, "wh2": wh2, "run": run, "bundles": bundles, "capture": capture}


def _leaks(wh: str) -> list[tuple[str, str, str]]:
    """(view, column, secret) for every planted value found in any column of any view."""
    con = pt2logs.connect(wh)
    views = [
        v
        for (v,) in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_type = 'VIEW'"
        ).fetchall()
    ]
    pattern = "|".join(re.escape(s) for s in PLANTED)
    found = []
    for v in views:
        cols = [
            c
            for (c,) in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [v]
            ).fetchall()
        ]
        hits = con.execute(
            "SELECT "
            + ", ".join(f'bool_or(regexp_matches(CAST("{c}" AS VARCHAR), $1))' for c in cols)
            + f' FROM "{v}"',
            [pattern],
        ).fetchone()
        for c, hit in zip(cols, hits, strict=True):
            if hit:
                texts = [
                    t
                    for (t,) in con.execute(
                        f'SELECT DISTINCT CAST("{c}" AS VARCHAR) FROM "{v}"'
                    ).fetchall()
                    if t
                ]
                found += [(v, c, s) for s in PLANTED if any(s in t for t in texts)]
    return found


def test_the_run_really_carried_the_secrets(planted: dict) -> None:
    # the test means something: the program printed them, torch wrote the env dump, the guard holds the token
    assert "PROG plain TorchHubTok3nPlanted" in planted["run"].stderr
    con = pt2logs.connect(planted["wh"])
    names = {
        n
        for (n,) in con.execute(
            "SELECT DISTINCT artifact_name FROM events WHERE artifact_name IS NOT NULL"
        ).fetchall()
    }
    assert "fx_graph_runnable" in names
    (runnable,) = con.execute(
        "SELECT payload FROM events WHERE artifact_name = 'fx_graph_runnable' "
        "AND payload LIKE '%TORCH_HUB_TOKEN%' LIMIT 1"
    ).fetchone()
    assert "os.environ['TORCH_HUB_TOKEN'] = ***" in runnable
    assert (
        con.execute(
            "SELECT count(*) FROM ingest_errors WHERE kind = 'payload_md5_mismatch'"
        ).fetchone()[0]
        == 0
    )
    (command,) = con.execute("SELECT command FROM runs WHERE name = 'captured'").fetchone()
    assert command.endswith("work.py --token *** -p *** --auth=*** https://bob:***@example.com/x")
    assert (
        con.execute(
            "SELECT count(*) FROM log_lines WHERE message LIKE '%X-Amz-Signature=***%'"
        ).fetchone()[0]
        >= 2
    )


def test_no_planted_secret_in_any_column_of_any_table(planted: dict) -> None:
    assert _leaks(planted["wh"]) == []


def test_a_later_ingest_of_the_capture_folder_finds_none(planted: dict) -> None:
    assert _leaks(planted["wh2"]) == []
    kept = b"".join(
        p.read_bytes()
        for p in planted["capture"].rglob("*")
        if p.is_file() and ".pt2logs_hook" not in p.parts
    )
    assert [s for s in LEARNT if s.encode() in kept] == []


def test_no_planted_secret_in_the_bundles_or_in_what_pt2logs_run_prints(planted: dict) -> None:
    for b in planted["bundles"]:
        assert b.returncode == 0, b.stderr[-2000:]
        assert [s for s in PLANTED if s in b.stdout] == []
    err = planted["run"].stderr
    own = err[
        err.index("pt2logs: `") :
    ]  # after the program ended: pt2logs' own lines (the program's are its own)
    assert "--token ***" in own and [s for s in PLANTED if s in own] == []


def test_a_secret_in_a_column_of_repeated_values_is_masked_in_every_row_that_holds_it() -> None:
    """Columns whose values repeat (cache-key components, inductor configs) are scanned by their
    distinct values: every row holding a secret-shaped value is still masked, the others untouched."""
    import pyarrow as pa

    from pt2logs.redaction.masking import scrub_batches

    secret = "Authorization: token ghp_" + "x" * 36
    values = (["fx_kwargs", "inputs", secret, "torch_version"] * 100)[:397]
    batch = pa.record_batch({"component": values, "value": [f"v{i}" for i in range(397)]})
    clean = pa.record_batch({"component": values[:2] * 200, "value": ["x"] * 400})
    scrubbed = scrub_batches([clean, batch, clean])
    assert (
        scrubbed[0] is clean and scrubbed[2] is clean
    )  # nothing secret-shaped: the batch itself, not a copy
    out = scrubbed[1].column("component").to_pylist()
    held = [i for i, v in enumerate(values) if v == secret]
    assert len(held) == 99
    assert all("ghp_" not in out[i] and "***" in out[i] for i in held)
    assert [v for i, v in enumerate(out) if i not in held] == [
        v for i, v in enumerate(values) if i not in held
    ]

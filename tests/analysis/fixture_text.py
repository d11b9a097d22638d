"""Real texts for the analyzer tests: trace records and TORCH_LOGS messages from the fixtures.

Deliberately simple and independent of pt2logs' readers (the analyzers are what is tested).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import FIXTURES

_HEADER = re.compile(r"^(?:\[rank\d+\]:)?[VIWEC]\d{4} [\d:.]+ +\d+ [^\]]+\] (\{.*)$")
_TL_LINE = re.compile(r"^(?P<prefix>.*?\[__(?P<art>\w+)\]) ?(?P<msg>.*)$")


def fixtures() -> Path:
    if not FIXTURES.is_dir():
        pytest.skip(f"fixtures not found at {FIXTURES}")
    return FIXTURES


def trace_files() -> list[Path]:
    root = fixtures()
    files = [*root.glob("gpu/*/trace/*.log"), *root.glob("tlparse/**/*.log")]
    return sorted([*files, *root.glob("tlparse/*.txt"), root / "torch_logs/trace_one_per_kind.log"])


def log_files() -> list[Path]:
    root = fixtures()
    files = [*root.glob("torch_logs/*.txt"), *root.glob("torch_logs/wild_pastes/*.txt")]
    return sorted([*files, *root.glob("gpu/*/torch_logs.txt")])


def records(path: Path) -> Iterator[tuple[dict, str]]:
    """(envelope, payload) of each TORCH_TRACE record of a file."""
    env: dict | None = None
    payload: list[str] = []
    for line in [*path.read_text(encoding="utf-8", errors="replace").split("\n"), ""]:
        if line.startswith("\t"):
            payload.append(line[1:])
            continue
        if env is not None:
            yield env, "\n".join(payload)
        m = _HEADER.match(line)
        try:
            env = json.loads(m.group(1)) if m else None
        except ValueError:
            env = None
        payload = []


def messages(path: Path, artifacts: set[str] | None = None) -> Iterator[str]:
    """Bodies of TORCH_LOGS messages (consecutive lines with one prefix, prefix removed), of the
    given artifacts (``None``: any line with a prefix)."""
    prev, body = None, []
    for line in [*path.read_text(encoding="utf-8", errors="replace").split("\n"), ""]:
        m = _TL_LINE.match(line)
        key = m["prefix"] if m and (artifacts is None or m["art"] in artifacts) else None
        if key != prev and body:
            yield "\n".join(body)
            body = []
        if key is not None:
            body.append(m["msg"])
        prev = key

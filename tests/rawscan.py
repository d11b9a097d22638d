"""A deliberately naive TORCH_TRACE reader for tests: nothing shared with pt2logs' own parser."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

HEADER = re.compile(r"^[VIWEC]\d{4} [\d:.]+ +\d+ [^\]]+\] (\{.*)$")
KERNEL = re.compile(r"^\w+ = async_compile\.\w+\(", re.M)


def read_text(path: Path) -> str:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode("utf-8", errors="replace")


def raw_records(path: Path):
    """(envelope dict, payload text) per record."""
    env, payload = None, []
    for line in read_text(path).split("\n"):
        line = line.rstrip("\r")
        m = HEADER.match(line)
        if m:
            if env is not None:
                yield env, "\n".join(payload)
            try:
                env = json.loads(m.group(1))
            except ValueError:
                env = None
            payload = []
        elif line.startswith("\t"):
            payload.append(line[1:])
    if env is not None:
        yield env, "\n".join(payload)


def event_key(env: dict) -> str:
    return next(iter(env))


def artifact_name(env: dict) -> str | None:
    k = event_key(env)
    return env[k].get("name") if k == "artifact" and isinstance(env[k], dict) else None

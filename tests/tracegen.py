"""Build small, valid TORCH_TRACE text in tests (md5s computed the way torch does)."""

from __future__ import annotations

import hashlib
import json


def record(
    event: dict,
    payload: str | None = None,
    *,
    when: str = "1206 15:18:15.925000",
    thread: int = 4242,
    where: str = "torch/_dynamo/utils.py:1288",
) -> str:
    env = dict(event)
    if payload is not None:
        env["has_payload"] = hashlib.md5(payload.encode()).hexdigest()
    head = f"V{when} {thread} {where}] {json.dumps(env)}\n"
    if payload is None:
        return head
    return head + "".join(f"\t{line}\n" for line in payload.split("\n"))


def chromium(name: str, ph: str, ts_us: float, cid: str = "0/0", **kw: object) -> str:
    payload = json.dumps(
        {
            "name": name,
            "ts": ts_us,
            "args": {"compile_id": cid},
            "ph": ph,
            "cat": "dynamo_timed",
            "tid": 0,
            "pid": 0,
        },
        indent=0,
    )
    fid, fcid = cid.split("/")
    return record(
        {"chromium_event": {}, "frame_id": int(fid), "frame_compile_id": int(fcid), "attempt": 0},
        payload,
        **kw,
    )

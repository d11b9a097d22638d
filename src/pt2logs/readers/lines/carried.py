"""What a line's wrapping said about it (:class:`Carried`), filled by the unwrapping layer
(:mod:`.framing`): the collector's stream and time, the host, pod and container, the rank, local rank,
worker and pid a launcher's prefix names, and Ray's repeat count."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class Carried:
    """What a line's framing and prefixes say about it (None where they say nothing)."""

    __slots__ = (
        "via",
        "stream",
        "time",
        "host",
        "pod",
        "container",
        "rank",
        "local_rank",
        "worker",
        "pid",
        "repeat",
    )

    def __init__(self, via: str = "", stream: str | None = None, time: str | int | None = None):
        self.via = via  # the framing and prefixes, outermost first, joined by "+"
        self.stream = stream
        self.time = (
            time  # as written (RFC 3339 text), or µs since the epoch (journald JSON, CloudWatch)
        )
        self.host: str | None = None
        self.pod: str | None = None
        self.container: str | None = None
        self.rank: int | None = None
        self.local_rank: int | None = None
        self.worker: str | None = None
        self.pid: int | None = None
        self.repeat: int | None = None

    @property
    def ts(self) -> int | None:
        """The time as µs since the epoch, UTC (None: no time, or one without a year or zone)."""
        return self.time if type(self.time) is int else iso_us(self.time) if self.time else None

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__ if getattr(self, k) not in (None, "")}

    def __repr__(self) -> str:
        return f"Carried({self.as_dict()})"


def iso_us(text: str) -> int | None:
    """RFC 3339 / ISO 8601 time with a zone → µs since the epoch (fractions past µs dropped); None otherwise."""
    t = text.replace("Z", "+00:00")
    if len(t) > 5 and t[-5] in "+-" and t[-3] != ":":
        t = f"{t[:-2]}:{t[-2:]}"  # journald's +0000
    dot = t.find(".", 19)
    if dot > 0:
        end = dot + 1
        while end < len(t) and t[end].isdigit():
            end += 1
        t = t[: min(end, dot + 7)] + t[end:]
    try:
        d = datetime.fromisoformat(t)
    except ValueError:
        return None
    if d.tzinfo is None:
        return None
    delta = d - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def carried_columns(c: Carried, file: str, line_no: int, rank: int | None) -> dict[str, Any]:
    """The ``collected_lines`` row of what a ``log_lines`` row's first line carried (tables/text.py)."""
    return {
        "file": file,
        "line_no": line_no,
        "rank": rank,
        "stream": c.stream,
        "collected_ts": c.ts,
        "host": c.host,
        "pod": c.pod,
        "container": c.container,
        "worker": c.worker,
        "repeat": c.repeat,
        "wrapped": c.via or None,
    }


def labels_into(obj: dict, c: Carried) -> None:
    """Kubernetes / Loki / GCP labels of a JSON record: pod, container, namespace, host, stream."""
    k = obj.get("kubernetes")
    if isinstance(k, dict):
        c.pod = c.pod or str_or_none(k.get("pod_name"))
        c.container = c.container or str_or_none(k.get("container_name"))
        c.host = c.host or str_or_none(k.get("host"))
    for key in ("labels", "resource"):
        lab = obj.get(key)
        if isinstance(lab, dict) and key == "resource":
            lab = lab.get("labels")
        if isinstance(lab, dict):
            c.pod = c.pod or str_or_none(lab.get("pod") or lab.get("pod_name"))
            c.container = c.container or str_or_none(
                lab.get("container") or lab.get("container_name")
            )
            c.host = c.host or str_or_none(
                lab.get("node_name")
                or lab.get("host")
                or lab.get("hostname")
                or lab.get("compute.googleapis.com/resource_name")
            )
            c.stream = c.stream or str_or_none(lab.get("stream"))
    log_name = obj.get("logName")
    if (
        c.stream is None
        and isinstance(log_name, str)
        and log_name.rsplit("/", 1)[-1] in ("stdout", "stderr")
    ):
        c.stream = log_name.rsplit("/", 1)[-1]


def str_or_none(v: Any) -> str | None:
    """A non-empty string value of a JSON record, else None."""
    return v if isinstance(v, str) and v else None

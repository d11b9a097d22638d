"""Each collector and launcher of docs/inputs.md "Logs as collected", written again in a few lines
after the program's own code (cited on each function), so tests can wrap real captures line by line
as that program would. Lines go in without their end of line; the wrapped file comes out as bytes."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone

T0 = datetime(2026, 11, 26, 17, 36, 29, 939238, tzinfo=timezone.utc)


def rfc3339nano(i: int, nanos: int = 993) -> str:
    """Go's time.RFC3339Nano of T0 + i ms: trailing zeros of the fraction dropped, ``Z`` for UTC."""
    t = T0 + timedelta(milliseconds=i)
    frac = f"{t.microsecond:06d}{nanos:03d}".rstrip("0")
    return t.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac}" if frac else "") + "Z"


def _go_json(s: str) -> str:
    """A JSON string as Go's encoders write it (HTML-safe: <, >, & escaped; U+2028/2029 escaped)."""
    out = json.dumps(s, ensure_ascii=False)
    return (
        out.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _parts(line: bytes, n: int) -> list[bytes]:
    return [line[i : i + n] for i in range(0, len(line), n)] or [b""]


def cri(lines: Iterable[str], stream: str = "stderr", max_len: int = 16384) -> bytes:
    """containerd internal/cri/io/logger.go redirectLogs: ``<RFC3339Nano> <stream> <P|F> <line>``; a line over
    ``max_len`` bytes (max_container_log_line_size, 16 KiB by default) goes out as P parts then an F part."""
    out = []
    for i, line in enumerate(lines):
        parts = _parts(line.encode(), max_len)
        for j, part in enumerate(parts):
            tag = b"F" if j == len(parts) - 1 else b"P"
            out.append(b" ".join([rfc3339nano(i).encode(), stream.encode(), tag, part]) + b"\n")
    return b"".join(out)


def docker_json(lines: Iterable[str], stream: str = "stderr", max_len: int = 16384) -> bytes:
    """moby jsonfilelog: ``{"log":…,"stream":…,"time":…}``; the copier cuts lines over 16 KiB into parts, and only
    the last part's ``log`` ends in ``\\n`` (marshalMessage)."""
    out = []
    for i, line in enumerate(lines):
        raw = line.encode()
        parts = _parts(raw, max_len)
        for j, part in enumerate(parts):
            text = part.decode("utf-8", "surrogateescape")
            if j == len(parts) - 1:
                text += "\n"
            out.append(
                f'{{"log":{_go_json(text)},"stream":"{stream}","time":"{rfc3339nano(i)}"}}\n'.encode(
                    "utf-8", "surrogateescape"
                )
            )
    return b"".join(out)


def journald_short_iso(
    lines: Iterable[str], host: str = "gpu-node-3", ident: str = "python3", pid: int = 1234
) -> bytes:
    """systemd logs-show.c output_short, -o short-iso: ``<%Y-%m-%dT%H:%M:%S%z> <host> <ident>[<pid>]: <message>``."""
    return b"".join(
        f"{(T0 + timedelta(seconds=i)).strftime('%Y-%m-%dT%H:%M:%S%z')} {host} {ident}[{pid}]: {line}\n".encode()
        for i, line in enumerate(lines)
    )


def journald_json(lines: Iterable[str], host: str = "gpu-node-3") -> bytes:
    """journalctl -o json: one entry per line; MESSAGE as an array of bytes when it holds a control character."""
    out = []
    for i, line in enumerate(lines):
        msg: object = line if line.isprintable() else list(line.encode())
        rec = {
            "__CURSOR": f"s=1;i={i}",
            "__REALTIME_TIMESTAMP": str(1795714589939238 + i),
            "_HOSTNAME": host,
            "SYSLOG_IDENTIFIER": "python3",
            "_PID": "1234",
            "_TRANSPORT": "stdout",
            "PRIORITY": "6",
            "MESSAGE": msg,
        }
        out.append(json.dumps(rec).encode() + b"\n")
    return b"".join(out)


def loki_jsonl(lines: Iterable[str]) -> bytes:
    """logcli --output=jsonl: Go's json.Marshal of {timestamp, line, labels} (keys sorted)."""
    return b"".join(
        (
            '{"labels":{"container":"trainer","namespace":"ml","pod":"trainer-0","stream":"stderr"},'
            f'"line":{_go_json(line)},"timestamp":"{rfc3339nano(i)}"}}\n'
        ).encode()
        for i, line in enumerate(lines)
    )


def gcp_logentry(lines: Iterable[str]) -> bytes:
    """A GKE container's LogEntry (textPayload) as a logging sink writes it, one per line."""
    return b"".join(
        json.dumps(
            {
                "insertId": f"id{i}",
                "logName": "projects/p/logs/stderr",
                "receiveTimestamp": rfc3339nano(i + 5),
                "resource": {
                    "type": "k8s_container",
                    "labels": {
                        "pod_name": "trainer-0",
                        "container_name": "trainer",
                        "namespace_name": "ml",
                        "cluster_name": "c",
                    },
                },
                "severity": "ERROR",
                "textPayload": line,
                "timestamp": rfc3339nano(i),
            }
        ).encode()
        + b"\n"
        for i, line in enumerate(lines)
    )


def cloudwatch_fluentbit(lines: Iterable[str]) -> bytes:
    """CloudWatch events (FilteredLogEvent) of an EKS pod shipped by Fluent Bit: the message is Fluent Bit's
    record of the Docker / CRI line, with its kubernetes metadata."""
    out = []
    for i, line in enumerate(lines):
        record = {
            "log": line + "\n",
            "stream": "stderr",
            "time": rfc3339nano(i),
            "kubernetes": {
                "pod_name": "trainer-0",
                "container_name": "trainer",
                "host": "ip-10-0-0-5",
            },
        }
        out.append(
            json.dumps(
                {
                    "logStreamName": "trainer-0",
                    "timestamp": 1795714589939 + i,
                    "message": json.dumps(record),
                    "ingestionTime": 1795714590001 + i,
                    "eventId": str(i),
                }
            ).encode()
            + b"\n"
        )
    return b"".join(out)


def timestamped(lines: Iterable[str]) -> bytes:
    """kubectl logs --timestamps / docker logs --timestamps: ``<RFC3339Nano> <line>``."""
    return b"".join(f"{rfc3339nano(i)} {line}\n".encode() for i, line in enumerate(lines))


def srun_label(lines: Iterable[str], task: int = 0, width: int = 1) -> bytes:
    """Slurm write_labelled_message.c _build_label: ``%*d: `` before every line."""
    return b"".join(f"{task:>{width}}: {line}\n".encode() for line in lines)


def compose(
    lines: Iterable[str], name: str = "trainer-1", width: int = 11, color: str = ""
) -> bytes:
    """docker compose presenter.setPrefix: colour(``%-<width>s | ``) before every line."""
    prefix = f"{name:<{width}} | "
    prefix = f"\x1b[{color}m{prefix}\x1b[0m" if color else prefix
    return b"".join(f"{prefix}{line}\n".encode() for line in lines)


def ray(
    lines: Iterable[str],
    worker: str = "RayTrainWorker",
    pid: int = 123,
    ip: str | None = "10.0.0.5",
    color: bool = True,
) -> bytes:
    """Ray worker.py print_worker_logs: ``{color}({name} pid={pid}{, ip=…}){reset} {line}`` (colorama CYAN)."""
    pre, post = ("\x1b[36m", "\x1b[0m") if color else ("", "")
    tag = f"{pre}({worker + ' ' if worker else ''}pid={pid}{f', ip={ip}' if ip else ''}){post} "
    return b"".join(f"{tag}{line}\n".encode() for line in lines)


def vllm_process(
    lines: Iterable[str], name: str = "EngineCore_DP0", pid: int = 2507, color: bool = False
) -> bytes:
    """vLLM _add_prefix: ``{CYAN}({worker_name} pid={pid}){RESET} `` (no colour when not a terminal)."""
    pre, post = ("\x1b[1;36m", "\x1b[0;0m") if color else ("", "")
    return b"".join(f"{pre}({name} pid={pid}){post} {line}\n".encode() for line in lines)


def torchrun_tee(lines: Iterable[str], role: str = "default", local_rank: int = 0) -> bytes:
    """torch elastic tail_log.py: ``[{name}{local_rank}]:{line}``."""
    return b"".join(f"[{role}{local_rank}]:{line}\n".encode() for line in lines)


def actor_tag(
    lines: Iterable[str], tag: str = "<root>.‹…VLLMGenerator generator{'gpus': 0/4}>"
) -> bytes:
    return b"".join(f"[actor={tag}] {line}\n".encode() for line in lines)


def lines_of(data: bytes) -> list[str]:
    """A wrapped file's lines (as the kit's iter_lines gives them: no end of line, a trailing \\r dropped)."""
    text = data.decode("utf-8", "surrogateescape")
    out = text.split("\n")
    if out and out[-1] == "":
        out.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in out]


#: every framing and prefix, by name: a function from lines to the wrapped file
WRITERS = {
    "cri": cri,
    "docker_json": docker_json,
    "journald": journald_short_iso,
    "journald_json": journald_json,
    "loki_jsonl": loki_jsonl,
    "gcp_logentry": gcp_logentry,
    "cloudwatch_json": cloudwatch_fluentbit,
    "timestamped": timestamped,
    "srun_label": srun_label,
    "compose": compose,
    "ray": ray,
    "vllm_process": vllm_process,
    "torchrun_tee": torchrun_tee,
    "actor_tag": actor_tag,
}

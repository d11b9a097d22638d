"""What collectors and launchers put around a program's lines: the table the unwrapping layer
(:mod:`.framing`) reads. Data only: each entry names the program that writes it, where its format is
defined (source file or documentation), one line as that program writes it, and the pattern that
recognises it. A new collector or launcher is one entry here (and its test in tests/test_framing.py).

* :data:`FRAMINGS`: one per file, the whole line is the collector's record and the program's line is a
  field of it (CRI node logs, Docker's json-file, JSON exports, journald). Detection order: the first
  whose test holds for most lines of a file's head is the file's framing.
* :data:`PREFIXES`: a launcher's or wrapper's label before the program's line, any number of them
  stacked (``0: (EngineCore_0 pid=132079) (RayWorkerWrapper pid=132266) <line>``).
* :data:`RAY_REPEAT`: Ray's log deduplication suffix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: RFC 3339 with any fraction and a zone (``Z``, ``+00:00``; journald's ISO form also ``+0000``)
ISO_TS = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d)"
#: an ANSI colour code (Ray, vLLM and docker compose colour their prefixes on a terminal, and often in files)
_ANSI = r"(?:\x1b\[[0-9;]*m)?"


@dataclass(frozen=True)
class Framing:
    """A collector's line format. ``kind`` says how a line is taken apart: ``text`` with ``line``
    (named groups: ``time``, ``stream``, ``tag``, ``host``, ``ident``, ``pid``, ``msg``), ``json`` with
    ``keys`` (the keys one of which holds the program's line; ``needs``: the keys that tell this JSON
    shape from the others)."""

    name: str
    writer: str
    source: str
    example: str
    kind: str
    line: re.Pattern[str] | None = None
    needs: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    #: a ``P`` tag (CRI) or a ``log`` without its ``\\n`` (Docker) is part of a longer line: joined
    partial: bool = False


@dataclass(frozen=True)
class Prefix:
    """A launcher's or wrapper's label. ``line`` matches it at the start of a line (named groups:
    ``rank``, ``local_rank``, ``role``, ``worker``, ``pid``, ``host``); ``every_line``: the program writes
    it on every line of its output, so a file has it on most lines (else one line in the head is enough)."""

    name: str
    writer: str
    source: str
    example: str
    line: re.Pattern[str]
    every_line: bool = False


FRAMINGS: tuple[Framing, ...] = (
    Framing(
        "cri",
        "Kubernetes node log: containerd / CRI-O write a container's stdout and stderr, kubelet reads it "
        "(/var/log/pods/…/0.log, /var/log/containers/*.log)",
        "kubernetes pkg/kubelet/kuberuntime/logs/logs.go parseCRILog (`<RFC3339Nano> <stream> <tag> <log>`, "
        "tag P = partial, F = full); containerd internal/cri/io/logger.go redirectLogs (time.RFC3339Nano, "
        "lines over max_container_log_line_size, 16 KiB by default, written as P parts)",
        "2026-11-26T17:36:29.939238993Z stderr F [rank0]:W1126 17:36:29.939000 1234 torch/_dynamo/convert_frame.py:1016] msg",
        "text",
        re.compile(
            rf"(?P<time>{ISO_TS}) (?P<stream>stdout|stderr) (?P<tag>[PF])(?::\S*)?(?: (?P<msg>.*))?$",
            re.S,
        ),
        partial=True,
    ),
    Framing(
        "docker_json",
        "Docker's json-file log driver (/var/lib/docker/containers/<id>/<id>-json.log; also Kubernetes "
        "nodes on dockershim); Fluent Bit / Fluentd records of it keep the shape",
        "moby daemon/logger/jsonfilelog/jsonlog/jsonlogbytes.go MarshalJSONBuf (`log`, `stream`, `attrs`, `time`); "
        "jsonfilelog.go marshalMessage (`\\n` only after the last part of a line); daemon/logger/copier.go "
        "(lines over 16 KiB split into parts); docs.docker.com/engine/logging/drivers/json-file",
        '{"log":"[rank0]:W1126 17:36:29.939000 1234 torch/_dynamo/convert_frame.py:1016] msg\\n","stream":"stderr",'
        '"time":"2026-11-26T17:36:29.939238993Z"}',
        "json",
        needs=("log",),
        keys=("log",),
        partial=True,
    ),
    Framing(
        "journald_json",
        "journalctl -o json (one journal entry per line)",
        "systemd man/journalctl.xml `-o json`; systemd.journal-fields(7): MESSAGE, __REALTIME_TIMESTAMP (µs), _HOSTNAME, "
        "SYSLOG_IDENTIFIER, _PID, CONTAINER_NAME; MESSAGE is an array of bytes when it is not printable UTF-8",
        '{"__REALTIME_TIMESTAMP":"1795714589939238","_HOSTNAME":"gpu-node-3","SYSLOG_IDENTIFIER":"python3","_PID":"1234",'
        '"MESSAGE":"[rank0]:W1126 17:36:29.939000 1234 torch/_dynamo/convert_frame.py:1016] msg"}',
        "json",
        needs=("MESSAGE",),
        keys=("MESSAGE",),
    ),
    Framing(
        "gcp_logentry",
        "Google Cloud Logging LogEntry, one per line (GKE container logs exported to a sink, "
        "`gcloud logging read --format=json` flattened)",
        "cloud.google.com/logging/docs/reference/v2/rest/v2/LogEntry (textPayload, timestamp, resource.labels "
        "pod_name / container_name / namespace_name, logName …/logs/stderr)",
        '{"textPayload":"[rank0]:W1126 17:36:29.939000 1234 torch/_dynamo/convert_frame.py:1016] msg","timestamp":'
        '"2026-11-26T17:36:29.939238993Z","logName":"projects/p/logs/stderr","resource":{"type":"k8s_container",'
        '"labels":{"pod_name":"trainer-0","container_name":"trainer","namespace_name":"ml"}}}',
        "json",
        needs=("textPayload",),
        keys=("textPayload",),
    ),
    Framing(
        "loki_jsonl",
        "Grafana Loki: logcli query --output=jsonl",
        "grafana/loki pkg/logcli/output/jsonl.go FormatAndPrintln (`labels`, `line`, `timestamp`)",
        '{"labels":{"container":"trainer","pod":"trainer-0","stream":"stderr"},"line":"[rank0]:W1126 17:36:29.939000 1234 '
        'torch/_dynamo/convert_frame.py:1016] msg","timestamp":"2026-11-26T17:36:29.939238993Z"}',
        "json",
        needs=("line",),
        keys=("line",),
    ),
    Framing(
        "cloudwatch_json",
        "AWS CloudWatch Logs events written one per line (the events of `aws logs filter-log-events` "
        "/ `get-log-events`, e.g. through `jq -c '.events[]'`); the message is often itself a Fluent Bit / Docker record",
        "docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_FilteredLogEvent.html (logStreamName, "
        "timestamp in ms, message, ingestionTime, eventId)",
        '{"logStreamName":"trainer-0","timestamp":1795714589939,"message":"[rank0]:W1126 17:36:29.939000 1234 '
        'torch/_dynamo/convert_frame.py:1016] msg","ingestionTime":1795714590001,"eventId":"3812"}',
        "json",
        needs=("message",),
        keys=("message", "@message"),
    ),
    Framing(
        "journald",
        "journalctl -o short-iso / short-iso-precise / short / short-precise",
        "systemd src/shared/logs-show.c output_short (`<time> <hostname> <identifier>[<pid>]: <message>`; ISO forms "
        "print the zone as +0000, systemd issue 26639); man/journalctl.xml",
        "2026-11-26T17:36:29+0000 gpu-node-3 python3[1234]: [rank0]:W1126 17:36:29.939000 1234 "
        "torch/_dynamo/convert_frame.py:1016] msg",
        "text",
        re.compile(
            rf"(?P<time>{ISO_TS}|[A-Z][a-z]{{2}} [ \d]\d \d\d:\d\d:\d\d(?:\.\d{{1,6}})?) (?P<host>\S+) "
            r"(?P<ident>[^\s\[\]:]+)(?:\[(?P<pid>\d+)\])?: (?P<msg>.*)$",
            re.S,
        ),
    ),
    Framing(
        "timestamped",
        "kubectl logs --timestamps, docker logs --timestamps, CloudWatch export to S3 / aws logs tail "
        "--format short: an RFC 3339 time and a space before each line",
        'kubernetes pkg/kubelet/kuberuntime/logs/logs.go (`timestamp.Format(timeFormatOut) + " "` with --timestamps); '
        "docs.docker.com/reference/cli/docker/container/logs (--timestamps, RFC3339Nano)",
        "2026-11-26T17:36:29.939238993Z [rank0]:W1126 17:36:29.939000 1234 torch/_dynamo/convert_frame.py:1016] msg",
        "text",
        re.compile(rf"(?P<time>{ISO_TS}) (?P<msg>.*)$", re.S),
    ),
)

PREFIXES: tuple[Prefix, ...] = (
    Prefix(
        "srun_label",
        "Slurm srun --label (-l): the task id before each line (padded to the widest id; "
        "`P<n> ` before it for a heterogeneous job component)",
        "SchedMD/slurm src/common/write_labelled_message.c _build_label (`%*d: `)",
        "0: [rank0]:W1126 17:36:29.939000 1234 torch/_dynamo/convert_frame.py:1016] msg",
        re.compile(r" {0,6}(?:P\d{1,4} +)?(?P<rank>\d{1,7}): "),
        every_line=True,
    ),
    Prefix(
        "torchrun_tee",
        "torchrun --tee / --redirects (the elastic agent's log tailer): `[<role><local rank>]:`",
        "pytorch torch/distributed/elastic/multiprocessing/tail_log.py TailLog.start (`[{name}{local_rank}]:`); "
        "agent/server/local_elastic_agent.py (role `default`)",
        "[default0]:[rank0]:W1126 17:36:29.939000 1234 torch/_dynamo/convert_frame.py:1016] msg",
        re.compile(r"\[(?!rank\d)(?P<role>[A-Za-z_][A-Za-z_-]{0,63})(?P<local_rank>\d{1,5})\]:"),
    ),
    Prefix(
        "compose",
        "docker compose up / logs: the container name padded to the widest one, then ` | ` "
        "(coloured on a terminal)",
        "docker/compose cmd/formatter/logs.go presenter.setPrefix (`%-<width>s | `)",
        "trainer-1  | [rank0]:W1126 17:36:29.939000 1234 torch/_dynamo/convert_frame.py:1016] msg",
        re.compile(rf"{_ANSI}(?P<container>[A-Za-z0-9][\w.-]{{0,127}}) +\| {_ANSI}"),
        every_line=True,
    ),
    Prefix(
        "process_tag",
        "Ray: a worker's or actor's output printed by the driver, `(<actor or task name> pid=<pid>, "
        "ip=<ip>) ` (ip only for another node; `(raylet)`, `(autoscaler +<t>)`); vLLM's worker and engine processes, "
        "`(<process name> pid=<pid>) ` (EngineCore_DP0, VllmWorker rank=0, Worker_TP3_EP3, APIServer)",
        "ray-project/ray python/ray/_private/worker.py print_worker_logs (`({prefix_for(data)}{pid}{ip_prefix}) `, colorama "
        "colours unless RAY_COLOR_PREFIX=0); vllm-project/vllm vllm/utils/system_utils.py _add_prefix "
        "(vllm/executor/multiproc_worker_utils.py before 0.11: `{CYAN}({worker_name} pid={pid}){RESET} `)",
        "(RayTrainWorker pid=123, ip=10.0.0.5) [rank0]:W1126 17:36:29.939000 1234 torch/_dynamo/convert_frame.py:1016] msg",
        # (unbounded repeats: a bounded {1,200} costs 12 ms to compile, and no character of them can run past the ")")
        re.compile(
            rf"{_ANSI}\((?:(?P<worker>[^()\n]+?) )?pid=(?P<pid>\d{{1,10}})(?:, ip=(?P<host>[^()\s]+))?\){_ANSI} "
            rf"|{_ANSI}\((?P<daemon>raylet|autoscaler \+\w+|gcs_server|monitor)(?:, ip=(?P<dhost>[^()\s]+))?\){_ANSI} "
        ),
    ),
    Prefix(
        "actor_tag",
        "an actor framework's tag before each line of an actor's output: `[actor=<actor path>] ` "
        "(spaces inside the tag)",
        "seen in public vLLM-on-actor-mesh logs (issue 33's excerpt); the program that prints it was not found in "
        "the indexed sources",
        "[actor=<root>.‹…VLLMGenerator generator{'gpus': 0/4}>] INFO 11-26 17:36:29 [backends.py:559] Dynamo bytecode "
        "transform time: 6.94 s",
        re.compile(r"\[actor=(?P<worker>[^\n]{1,300}?)\] "),
    ),
)

#: Ray's log deduplication (RAY_DEDUP_LOGS, on by default): the first line of a pattern is printed at
#: once; the next lines of the same pattern from other processes within the window are counted and
#: printed as the latest one with this suffix (green, and the first time with an explanation). N counts
#: the lines *not* printed before: the suffixed line stands for N lines (the first was printed on its
#: own earlier), so N + 1 processes printed it in all. A count of 1 prints the line plainly.
#: ray-project/ray python/ray/_private/ray_logging/__init__.py DedupState.formatted / LogDeduplicator.
RAY_REPEAT = re.compile(
    r"(?:\x1b\[32m)? \[repeated (?P<repeat>\d{1,9})x across cluster\]"
    r"(?: \(Ray deduplicates logs by default\.[^\n]*?\))?(?:\x1b\[0m)?$"
)
RAY_REPEAT_EXAMPLE = (
    "(RayTrainWorker pid=123, ip=10.0.0.5) INFO 11-26 17:36:29 [monitor.py:33] init engine took "
    "7.154 s [repeated 7x across cluster]"
)

FRAMINGS_BY_NAME = {f.name: f for f in FRAMINGS}
PREFIXES_BY_NAME = {p.name: p for p in PREFIXES}

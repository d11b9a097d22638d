"""A bug report for one run (``pt2logs bundle``): what the torch.compile debugging guides ask for.

:func:`bug_report` returns the Markdown (pastes into a GitHub issue as is: collapsible sections,
fences that log text cannot break) and the excerpts in full (for a ``.zip`` beside it); it writes
nothing, the CLI does. The facts come from the warehouse (:mod:`~pt2logs.bugreport.facts`), the
document from :data:`~pt2logs.bugreport.sections.SECTIONS`: torch / Python / platform versions, the
command and debug environment, the failing compile's exception, stack, Dynamo graph, FX graphs and
output code, the guard failures, for Spyre runs the TORCH_SPYRE_DEBUG excerpt, the kernel's sdsc spec
and the sendnn vs spyre comparison, and the minifier command to try next. Home folders, user names,
host names and secret-looking values are redacted unless ``redact=False``
(:class:`pt2logs.redaction.redact.Redactor`).
"""

from __future__ import annotations

import contextlib
import getpass
import socket
from dataclasses import dataclass, field

import duckdb

from pt2logs.bugreport.context import Ctx
from pt2logs.bugreport.facts import Facts, all_text, gather
from pt2logs.bugreport.sections import SECTIONS
from pt2logs.redaction.redact import Redactor
from pt2logs.reports.runs import Run, resolve_run

#: GitHub refuses an issue body over 65,536 characters; excerpts shrink until the report fits
MAX_CHARS = 60_000


@dataclass
class BugReport:
    run: Run
    compile_id: str | None
    markdown: str
    #: excerpts in full, redacted like the Markdown: path in the zip → text
    files: dict[str, str] = field(default_factory=dict)
    facts: Facts | None = None


def _whoami() -> tuple[list[str], list[str]]:
    """This machine's user and host names: a report made where the job ran names them too."""
    users: list[str] = []
    with contextlib.suppress(KeyError, OSError):
        users.append(getpass.getuser())
    return users, [socket.gethostname()]


def bug_report(
    con: duckdb.DuckDBPyConnection,
    run: str | None,
    compile_id: str | None = None,
    *,
    redact: bool = True,
    compare: str | None = None,
) -> BugReport:
    """The report for ``run`` (id, prefix or name; the newest when None) about ``compile_id`` (default:
    its first failed compile, else its first compile); ``compare``: the run of the other Spyre backend
    (default: the run with the same tags but ``backend``, sendnn vs spyre)."""
    r = resolve_run(con, run)
    facts = gather(con, r.run_id, compile_id, compare)
    if redact:
        users, hosts = _whoami()
        red = Redactor(
            users,
            hosts
            + [
                h
                for h in (facts.run.get("host"), (facts.compare or {}).get("run", {}).get("host"))
                if h
            ],
        )
        for t in all_text(facts):
            red.learn(t)
        fn = red
    else:

        def fn(t: str) -> str:
            return t

    scale = 1.0
    while True:
        ctx = Ctx(facts, fn, scale)
        parts = [s(ctx) for s in SECTIONS]
        text = "\n".join(p.rstrip() + "\n" for p in parts if p)
        if len(text) <= MAX_CHARS or scale < 0.05:
            break
        scale /= 2
    files = {"report.md": text, **ctx.files}
    return BugReport(r, (facts.compile or {}).get("compile_id"), text, files, facts)

"""The sections of a bug report, in order: each a function from the facts to Markdown (or None when
it has nothing to say). :data:`SECTIONS` is the one list; a new section is one function added there.

Every value that comes from a log is redacted (``ctx.r``) and then put in a code span or a fenced
block (:mod:`pt2logs.reports.markdown`), never in running text. The graphs section and the
Spyre section are modules of their own (:mod:`~pt2logs.bugreport.graphs`, :mod:`~pt2logs.bugreport.spyre`);
:class:`~pt2logs.bugreport.context.Ctx` is what every section is written with.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable

from pt2logs.bugreport.context import Ctx, slug
from pt2logs.bugreport.facts import FORMAT_SWITCHES
from pt2logs.bugreport.graphs import graphs
from pt2logs.bugreport.spyre import spyre
from pt2logs.reports import markdown as md


def title(ctx: Ctx) -> str:
    c = ctx.facts.compile or {}
    what = c.get("exc_type") if c.get("failed") else "torch.compile"
    where = f" in {md.inline_code(ctx.r(c['function']))}" if c.get("function") else ""
    head = f"# {md.text(what or 'torch.compile')} report{where}\n\n"
    run = ctx.facts.run
    lines = [f"Run {md.inline_code(ctx.r(run['run']))} ({md.inline_code(run['run_id'])})"]
    if c:
        lines.append(
            f"compile {md.inline_code(c['compile_id'] or '?')}"
            + (f", rank {c['rank']}" if c.get("rank") is not None else "")
        )
        if c.get("failed"):
            # the message's first paragraph on one line, before torch's Explanation / Hint (like message_line())
            para = re.split(
                r"\n\s*\n|\n\s*(?:Explanation|Hint|Developer debug context):",
                (c.get("exc_message") or "").strip(),
            )[0]
            first = " ".join(para.split())[:200]
            lines.append(
                f"failed with {md.inline_code(ctx.r(': '.join(x for x in (c.get('exc_type'), first) if x)))}"
            )
    return head + "; ".join(lines) + ".\n"


def environment(ctx: Ctx) -> str:
    f = ctx.facts
    run, rec = f.run, f.record
    c = f.compile or {}
    rows = [
        ("torch", run.get("torch")),
        ("Python", run.get("python")),
        ("CUDA", run.get("cuda_version") or c.get("cuda_version")),
        ("Triton", run.get("triton_version") or c.get("triton_version")),
        ("platform", rec.get("platform")),
        ("host", run.get("host")),
        ("git commit", run.get("git_commit")),
        ("ranks", run.get("n_ranks")),
        ("pt2logs", run.get("pt2logs_version")),
    ]
    out = ["## Environment\n", "| | |", "|---|---|"]
    out += [f"| {k} | {md.code(ctx.r(str(v)))} |" for k, v in rows if v not in (None, "")]
    out.append("")
    if run.get("command"):
        out.append("Command (recorded by `pt2logs run`):\n")
        out.append(md.fence(ctx.r(run["command"]), "sh"))
    env = rec.get("env") if isinstance(rec.get("env"), dict) else None
    if env:
        out.append("Debug environment variables in force:\n")
        out.append(md.fence("\n".join(ctx.r(f"{k}={v}") for k, v in sorted(env.items())), "sh"))
    else:
        switches = [FORMAT_SWITCHES[x] for x in run.get("formats") or [] if x in FORMAT_SWITCHES]
        if switches:
            out.append(
                "Debug switches, as the logs read show (no `pt2logs run` record of the environment): "
                + ", ".join(md.inline_code(s) for s in switches)
                + ".\n"
            )
    if run.get("exit_code") is not None:
        out.append(
            f"The command ended with exit code {md.inline_code(str(run['exit_code']))}"
            + (f" ({md.inline_code(run['exit_signal'])})" if run.get("exit_signal") else "")
            + ".\n"
        )
    return "\n".join(out)


def failure(ctx: Ctx) -> str | None:
    c = ctx.facts.compile
    if not c or not c.get("failed"):
        return None
    out = [f"## The failing compile: {md.inline_code(c['compile_id'] or '?')}\n"]
    fn = c.get("function")
    if fn:
        loc = (
            f"{c.get('function_file')}:{c.get('function_line')}" if c.get("function_file") else None
        )
        out.append(
            f"Function {md.inline_code(ctx.r(fn))}"
            + (f" at {md.inline_code(ctx.r(loc))}" if loc else "")
            + (
                f"; user frame {md.inline_code(ctx.r(str(c['frame_file'])) + ':' + str(c['frame_line']))}"
                if c.get("frame_file")
                else ""
            )
            + f"; logged at {md.inline_code(ctx.r(str(c['file'])) + ':' + str(c['line_no']))}.\n"
        )
    msg = c.get("exc_message") or ""
    out.append("Exception:\n")
    shown, left = md.cut(
        ctx.r(f"{c.get('exc_type') or ''}: {msg}".strip(": ")), max(10, int(40 * ctx.scale)), 4000
    )
    out.append(md.fence(shown + (f"\n… {left} more lines" if left else ""), "text"))
    ctx.files[f"excerpts/{slug(c['compile_id'])}_exception.txt"] = ctx.r(msg)
    if c.get("stack"):
        out.append(
            ctx.excerpt(
                f"{slug(c['compile_id'])}_stack.txt",
                f"Stack ({len(c['stack'])} frames, outermost first)",
                "\n".join(c["stack"]),
                "text",
                lines=60,
            )
        )
    tb = [a for a in ctx.facts.artifacts if a["what"] == "dynamo_error" and a.get("payload")]
    if tb:
        out.append(
            ctx.excerpt(
                f"{slug(c['compile_id'])}_dynamo_error.txt",
                "Traceback (the trace's dynamo_error)",
                tb[-1]["payload"],
                "pytb",
                lines=120,
                chars=9000,
            )
        )
    return "\n".join(out)


def guard_failures(ctx: Ctx) -> str | None:
    rows = ctx.facts.guards
    if not rows:
        return None
    fn = (ctx.facts.compile or {}).get("function")
    mine = [r for r in rows if fn and r.get("function") == fn] or rows
    n = max(5, int(30 * ctx.scale))
    shown = [
        {k: ctx.r(str(v)) if isinstance(v, str) else v for k, v in r.items()} for r in mine[:n]
    ]
    body = md.table(
        shown, ["compile_id", "after", "function", "cause", "guarded_on", "limit_hit", "reason"]
    )
    ctx.files["excerpts/guard_failures.txt"] = "\n".join(
        f"{r['compile_id']} after {r['after']}: {r['function']}: {r['cause']}: {ctx.r(str(r['reason']))}"
        for r in mine
    )
    more = f"\n_{len(mine) - n} more in `excerpts/guard_failures.txt`._\n" if len(mine) > n else ""
    what = f"of {md.inline_code(ctx.r(fn))}" if fn and mine is not rows else "of the run"
    return f"## Guard failures (recompiles {what})\n\n" + md.details(
        f"{len(mine)} recompiles", body + more, open_=len(mine) <= 5
    )


def advice(ctx: Ctx) -> str | None:
    """The run's advice items (docs/advice.md): what the debugging guides say to do about what it hit."""
    rows = ctx.facts.advice
    if not rows:
        return None
    shown = [
        {
            "finding": r["finding"],
            "evidence": ctx.r(str(r["evidence"])),
            "frames": ctx.r(str(r["frames"] or "?")),
            "compile_s": round(r["compile_s"] or 0, 2),
            "recompiles": r["recompiles"],
            "breaks": r["breaks"],
        }
        for r in rows
    ]
    # finding and advice are pt2logs' own Markdown (advice.toml), not log text
    todo = "\n".join(f"{i}. **{r['finding']}**: {r['advice']}" for i, r in enumerate(rows, 1))
    return (
        "## What the advice table says (`pt2logs advise`)\n\n"
        + md.table(shown, ["finding", "evidence", "frames", "compile_s", "recompiles", "breaks"])
        + "\n"
        + todo
        + "\n"
    )


def try_next(ctx: Ctx) -> str:
    c = ctx.facts.compile or {}
    cmd = ctx.facts.run.get("command")
    target = ctx.r(cmd) if cmd else "python your_script.py"
    msg = c.get("exc_message") or ""
    dynamo_level = (
        c.get("exc_type") == "BackendCompilerFailed"
        and "backend='inductor'" not in msg
        and not any(a["what"].startswith("aot_") for a in ctx.facts.artifacts)
    )
    first, other = ("dynamo", "aot") if dynamo_level else ("aot", "dynamo")
    out = [
        "## What to try next\n",
        (
            f"Minify the failure (torch writes a `repro.py` under `torch_compile_debug/`; `after={first}` fits this failure"
            + (", a backend that is not AOTAutograd-based" if dynamo_level else "")
            + "):\n"
        )
        if c.get("failed")
        else "When a compile fails, minify it (torch writes a `repro.py` under `torch_compile_debug/`):\n",
        md.fence(
            f"TORCHDYNAMO_REPRO_AFTER={first} TORCHDYNAMO_REPRO_LEVEL=2 {_without_env(target)}\n"
            f"# if that finds nothing: TORCHDYNAMO_REPRO_AFTER={other}",
            "sh",
        ),
        "Keep every artifact of the compile (graphs, generated code) and a structured trace for `tlparse`:\n",
        md.fence(
            f"TORCH_COMPILE_DEBUG=1 TORCH_TRACE=/tmp/trace {_without_env(target)}\ntlparse /tmp/trace",
            "sh",
        ),
    ]
    if ctx.facts.is_spyre:
        out.append(
            "On Spyre, add the transfer log and the compile timing: `TORCH_SPYRE_DEBUG=1 TORCH_SPYRE_TIMING=1`.\n"
        )
    return "\n".join(out)


def _without_env(cmd: str) -> str:
    """The command without leading VAR=value words (the repro variables replace them)."""
    try:
        words = shlex.split(cmd)
    except ValueError:
        return cmd
    while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
        words.pop(0)
    return shlex.join(words) if words else cmd


def footer(ctx: Ctx) -> str:
    red = (
        (
            "Home folders, user names, host names and secret-looking values were redacted "
            "(`pt2logs bundle --no-redact` keeps them)."
        )
        if ctx.r("/home/x/") != "/home/x/"
        else "Nothing was redacted (`--no-redact`)."
    )
    return f"---\n_Made by `pt2logs bundle` from the run's logs. {red}_\n"


#: the report, in order; each returns Markdown or None (nothing to say)
def codegen(ctx: Ctx) -> str | None:
    """AOTInductor / export compiles, the ranks that disagree on tlparse's checks, kernel provenance."""
    f, out = ctx.facts, []
    if f.aot:
        rows = [dict(r, wrapper_path=ctx.r(str(r["wrapper_path"] or ""))) for r in f.aot]
        out.append(
            "## AOTInductor and export compiles\n\n"
            + md.table(rows, ["rank", "kind", "compile_s", "kernels", "wrapper_bytes", "status"])
        )
    if f.rank_checks:
        rows = [dict(r, values=ctx.r(str(r["values"]))) for r in f.rank_checks]
        out.append(
            "## Where the ranks disagree (tlparse's multi-rank checks)\n\n"
            + md.table(rows, ["check", "ranks", "values", "detail"])
        )
    if f.provenance:
        n = max(5, int(30 * ctx.scale))
        rows = [
            {k: ctx.r(str(v)) if isinstance(v, str) else v for k, v in r.items()}
            for r in f.provenance
        ]
        more = (
            f"\n_{len(rows) - n} more: `pt2logs query kernel_provenance`._\n"
            if len(rows) > n
            else ""
        )
        out.append(
            "## Kernel provenance (kernel, FX nodes, user line)\n\n"
            + md.details(
                f"{len(rows)} kernel lines",
                md.table(
                    rows[:n], ["compile_id", "kernel_name", "fx_nodes", "user_line", "user_code"]
                )
                + more,
                open_=len(rows) <= 5,
            )
        )
    return "\n".join(out) or None


SECTIONS: list[Callable[[Ctx], str | None]] = [
    title,
    environment,
    failure,
    graphs,
    guard_failures,
    advice,
    codegen,
    spyre,
    try_next,
    footer,
]

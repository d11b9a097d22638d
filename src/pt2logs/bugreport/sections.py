"""The sections of a bug report, in order: each a function from the facts to Markdown (or None when
it has nothing to say). :data:`SECTIONS` is the one list; a new section is one function added there.

Every value that comes from a log is redacted (``ctx.r``) and then put in a code span or a fenced
block (:mod:`pt2logs.bugreport.markdown`), never in running text.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pt2logs.bugreport import markdown as md
from pt2logs.bugreport.facts import FORMAT_SWITCHES, Facts


@dataclass
class Ctx:
    facts: Facts
    r: Callable[[str], str]  # the redactor (identity with --no-redact)
    scale: float = 1.0  # excerpt sizes, lowered when the report is too long for an issue
    files: dict[str, str] = field(default_factory=dict)  # excerpts in full, for the .zip

    def excerpt(self, name: str, title: str, text: str, info: str = "", lines: int = 80, chars: int = 6000,
                open_: bool = False, tail: bool = False) -> str:
        """A folded excerpt of ``text`` (redacted): its start, or its end (``tail``: a log's last lines);
        the whole of it goes to the zip as ``excerpts/<name>``."""
        text = self.r(text)
        self.files[f"excerpts/{name}"] = text
        shown, left = (md.cut_tail if tail else md.cut)(text, max(5, int(lines * self.scale)), max(500, int(chars * self.scale)))
        where = "earlier" if tail else "more"
        note = f"\n_{left} {where} lines in `excerpts/{name}` of the .zip bundle._\n" if left else ""
        return md.details(title, md.fence(shown, info) + note, open_=open_)


def _cid(ctx: Ctx) -> str | None:
    return (ctx.facts.compile or {}).get("compile_id")


def title(ctx: Ctx) -> str:
    c = ctx.facts.compile or {}
    what = c.get("exc_type") if c.get("failed") else "torch.compile"
    where = f" in {md.code(ctx.r(c['function']))}" if c.get("function") else ""
    head = f"# {md.text(what or 'torch.compile')} report{where}\n\n"
    run = ctx.facts.run
    lines = [f"Run {md.code(ctx.r(run['run']))} ({md.code(run['run_id'])})"]
    if c:
        lines.append(f"compile {md.code(c['compile_id'] or '?')}" + (f", rank {c['rank']}" if c.get("rank") is not None else ""))
        if c.get("failed"):
            # the message's first paragraph on one line, before torch's Explanation / Hint (like message_line())
            para = re.split(r"\n\s*\n|\n\s*(?:Explanation|Hint|Developer debug context):", (c.get("exc_message") or "").strip())[0]
            first = " ".join(para.split())[:200]
            lines.append(f"failed with {md.code(ctx.r(': '.join(x for x in (c.get('exc_type'), first) if x)))}")
    return head + "; ".join(lines) + ".\n"


def environment(ctx: Ctx) -> str:
    f = ctx.facts
    run, rec = f.run, f.record
    c = f.compile or {}
    rows = [("torch", run.get("torch")), ("Python", run.get("python")),
            ("CUDA", run.get("cuda_version") or c.get("cuda_version")),
            ("Triton", run.get("triton_version") or c.get("triton_version")),
            ("platform", rec.get("platform")), ("host", run.get("host")), ("git commit", run.get("git_commit")),
            ("ranks", run.get("n_ranks")), ("pt2logs", run.get("pt2logs_version"))]
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
            out.append("Debug switches, as the logs read show (no `pt2logs run` record of the environment): "
                       + ", ".join(md.code(s) for s in switches) + ".\n")
    if run.get("exit_code") is not None:
        out.append(f"The command ended with exit code {md.code(str(run['exit_code']))}"
                   + (f" ({md.code(run['exit_signal'])})" if run.get("exit_signal") else "") + ".\n")
    return "\n".join(out)


def failure(ctx: Ctx) -> str | None:
    c = ctx.facts.compile
    if not c or not c.get("failed"):
        return None
    out = [f"## The failing compile: {md.code(c['compile_id'] or '?')}\n"]
    fn = c.get("function")
    if fn:
        loc = f"{c.get('function_file')}:{c.get('function_line')}" if c.get("function_file") else None
        out.append(f"Function {md.code(ctx.r(fn))}" + (f" at {md.code(ctx.r(loc))}" if loc else "")
                   + (f"; user frame {md.code(ctx.r(str(c['frame_file'])) + ':' + str(c['frame_line']))}" if c.get("frame_file") else "")
                   + f"; logged at {md.code(ctx.r(str(c['file'])) + ':' + str(c['line_no']))}.\n")
    msg = c.get("exc_message") or ""
    out.append("Exception:\n")
    shown, left = md.cut(ctx.r(f"{c.get('exc_type') or ''}: {msg}".strip(": ")), max(10, int(40 * ctx.scale)), 4000)
    out.append(md.fence(shown + (f"\n… {left} more lines" if left else ""), "text"))
    ctx.files[f"excerpts/{_slug(c['compile_id'])}_exception.txt"] = ctx.r(msg)
    if c.get("stack"):
        out.append(ctx.excerpt(f"{_slug(c['compile_id'])}_stack.txt", f"Stack ({len(c['stack'])} frames, outermost first)",
                               "\n".join(c["stack"]), "text", lines=60))
    tb = [a for a in ctx.facts.artifacts if a["what"] == "dynamo_error" and a.get("payload")]
    if tb:
        out.append(ctx.excerpt(f"{_slug(c['compile_id'])}_dynamo_error.txt", "Traceback (the trace's dynamo_error)",
                               tb[-1]["payload"], "pytb", lines=120, chars=9000))
    return "\n".join(out)


_GRAPHS = [  # (what, title, fence info, lines, chars)
    ("dynamo_output_graph", "Dynamo graph (dynamo_output_graph)", "python", 80, 6000),
    ("aot_joint_graph", "AOT joint graph", "python", 60, 5000),
    ("aot_forward_graph", "AOT forward graph", "python", 60, 5000),
    ("aot_backward_graph", "AOT backward graph", "python", 60, 5000),
    ("aot_inference_graph", "AOT inference graph", "python", 60, 5000),
    ("inductor_post_grad_graph", "FX graph after inductor's post-grad passes", "python", 60, 5000),
    ("fx_graph_runnable", "fx_graph_runnable (a script that reproduces the FX graph)", "python", 60, 5000),
    ("inductor_output_code", "Output code (inductor_output_code)", "python", 120, 8000),
]


def graphs(ctx: Ctx) -> str | None:
    by = {}
    for a in ctx.facts.artifacts:
        if a.get("payload"):
            by[a["what"]] = a  # the last of each kind (a restarted compile logs again)
    parts = []
    for what, ttl, info, lines, chars in _GRAPHS:
        a = by.get(what)
        if a is not None:
            where = f"{a['file']}:{a['line_no']}"
            parts.append(ctx.excerpt(f"{_slug(_cid(ctx))}_{what}.txt", f"{ttl}, {ctx.r(where)}", a["payload"], info, lines, chars))
    if not parts and ctx.facts.debug_files:
        return _debug_graphs(ctx)
    if not parts:
        if ctx.facts.compile is None:
            return None
        return ("## Graphs and code\n\nThe logs of this run hold no graph or output code for this compile "
                "(run with `TORCH_TRACE=/tmp/trace` to log them).\n")
    return "## Graphs and code\n\n" + "\n".join(parts)


_DEBUG_KINDS = ["fx_graph_readable", "fx_graph_transformed", "ir_post_fusion", "output_code"]


def _debug_graphs(ctx: Ctx) -> str:
    """The TORCH_COMPILE_DEBUG files of the run's first graph folder (they name no compile id)."""
    files = ctx.facts.debug_files
    first = files[0]["file"].rsplit("/", 1)[0] if "/" in files[0]["file"] else ""
    mine = {a["what"].split(":", 1)[1]: a for a in files if (a["file"].rsplit("/", 1)[0] if "/" in a["file"] else "") == first}
    parts = []
    for kind in _DEBUG_KINDS:
        a = mine.get(kind)
        if a is not None and a.get("payload"):
            parts.append(ctx.excerpt(f"compile_debug_{_slug(kind)}.txt", ctx.r(a["file"]), a["payload"],
                                     "text" if kind.startswith("ir_") else "python", 120 if kind == "output_code" else 80, 8000))
    folders = len({a["file"].rsplit("/", 1)[0] if "/" in a["file"] else "" for a in files})
    note = ("From TORCH_COMPILE_DEBUG=1 (its files name no compile id)"
            + (f": the first of {folders} graph folders, {md.code(ctx.r(first))}" if folders > 1 else "") + ".\n\n")
    return "## Graphs and code\n\n" + note + "\n".join(parts)


def guard_failures(ctx: Ctx) -> str | None:
    rows = ctx.facts.guards
    if not rows:
        return None
    fn = (ctx.facts.compile or {}).get("function")
    mine = [r for r in rows if fn and r.get("function") == fn] or rows
    n = max(5, int(30 * ctx.scale))
    shown = [{k: ctx.r(str(v)) if isinstance(v, str) else v for k, v in r.items()} for r in mine[:n]]
    body = md.table(shown, ["compile_id", "after", "function", "cause", "guarded_on", "limit_hit", "reason"])
    ctx.files["excerpts/guard_failures.txt"] = "\n".join(
        f"{r['compile_id']} after {r['after']}: {r['function']}: {r['cause']}: {ctx.r(str(r['reason']))}" for r in mine)
    more = f"\n_{len(mine) - n} more in `excerpts/guard_failures.txt`._\n" if len(mine) > n else ""
    what = f"of {md.code(ctx.r(fn))}" if fn and mine is not rows else "of the run"
    return f"## Guard failures (recompiles {what})\n\n" + md.details(f"{len(mine)} recompiles", body + more, open_=len(mine) <= 5)


def advice(ctx: Ctx) -> str | None:
    """The run's advice items (docs/advice.md): what the debugging guides say to do about what it hit."""
    rows = ctx.facts.advice
    if not rows:
        return None
    shown = [{"finding": r["finding"], "evidence": ctx.r(str(r["evidence"])), "frames": ctx.r(str(r["frames"] or "?")),
              "compile_s": round(r["compile_s"] or 0, 2), "recompiles": r["recompiles"], "breaks": r["breaks"]} for r in rows]
    # finding and advice are pt2logs' own Markdown (advice.toml), not log text
    todo = "\n".join(f"{i}. **{r['finding']}**: {r['advice']}" for i, r in enumerate(rows, 1))
    return ("## What the advice table says (`pt2logs advise`)\n\n"
            + md.table(shown, ["finding", "evidence", "frames", "compile_s", "recompiles", "breaks"]) + "\n" + todo + "\n")


def spyre(ctx: Ctx) -> str | None:
    f = ctx.facts
    if not f.is_spyre:
        return None
    out = ["## Spyre\n"]
    if f.spyre_log:
        text = "\n".join(r["text"] for r in f.spyre_log)
        first, last = f.spyre_log[0], f.spyre_log[-1]
        out.append(ctx.excerpt("spyre_debug_log.txt", f"TORCH_SPYRE_DEBUG log: the last copies and launches "
                               f"({ctx.r(first['file'])}:{first['line_no']}-{last['line_no']})", text, "text", 80, 8000, tail=True))
    else:
        out.append("No TORCH_SPYRE_DEBUG transfer lines in this run's logs (run with `TORCH_SPYRE_DEBUG=1`).\n")
    specs = [s for s in f.spyre_specs if s.get("launched")] or f.spyre_specs
    for s in specs[:2]:
        label = f"sdsc kernel spec {s['file']} ({s.get('kernels') or '?'})" + (f", launched as {s['launched']}" if s.get("launched") else "")
        if s.get("text"):
            out.append(ctx.excerpt(f"spyre_{_slug(s['file'])}", ctx.r(label), s["text"], "json", 80, 6000))
        else:
            out.append(f"The kernel spec {md.code(ctx.r(s['file']))} is no longer at {md.code(ctx.r(str(s['path'])))}.\n")
    if f.compare:
        out.append(_comparison(ctx))
    return "\n".join(out)


def _by_direction(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        d = out.setdefault(r.get("direction") or "unknown", {"copies": 0, "device_mb": 0.0, "padding_mb": 0.0})
        d["copies"] += int(r.get("transfers") or 0)
        d["device_mb"] += float(r.get("device_bytes") or 0) / 1e6
        d["padding_mb"] += float(r.get("padding_bytes") or 0) / 1e6
    return out


def _comparison(ctx: Ctx) -> str:
    """This run beside the run of the other backend (sendnn vs spyre): the headline figures and the copies."""
    f = ctx.facts
    other = f.compare or {}
    a, b = f.overview, other.get("overview") or {}
    rows = [{"figure": k, "this run": a.get(k), "other run": b.get(k)}
            for k in ["compiles", "compile_s", "recompiles", "graph_breaks", "kernels", "failures"]]
    ta, tb = _by_direction(other.get("mine") or []), _by_direction(other.get("transfers") or [])
    for d in sorted(set(ta) | set(tb)):
        for k, label in (("copies", "copies"), ("device_mb", "device MB"), ("padding_mb", "padding MB")):
            va, vb = ta.get(d, {}).get(k), tb.get(d, {}).get(k)
            rows.append({"figure": f"{label} {d}", "this run": None if va is None else round(va, 3),
                         "other run": None if vb is None else round(vb, 3)})
    mine = _tag(f.run.get("tags"), "backend") or "this run"
    theirs = _tag(other["run"].get("tags"), "backend") or "other run"
    return "\n".join([f"### `sendnn` vs `spyre`: this run ({md.code(mine)}) and {md.code(ctx.r(other['run']['run']))} ({md.code(theirs)})\n",
                      md.table([{k: (str(v) if v is not None else None) for k, v in r.items()} for r in rows],
                               ["figure", "this run", "other run"])])


def _tag(tags: Any, key: str) -> str | None:
    try:
        t = json.loads(tags) if isinstance(tags, str) else tags
    except ValueError:
        return None
    return str(t[key]) if isinstance(t, dict) and t.get(key) is not None else None


def try_next(ctx: Ctx) -> str:
    c = ctx.facts.compile or {}
    cmd = ctx.facts.run.get("command")
    target = ctx.r(cmd) if cmd else "python your_script.py"
    msg = c.get("exc_message") or ""
    dynamo_level = c.get("exc_type") == "BackendCompilerFailed" and "backend='inductor'" not in msg and \
        not any(a["what"].startswith("aot_") for a in ctx.facts.artifacts)
    first, other = ("dynamo", "aot") if dynamo_level else ("aot", "dynamo")
    out = ["## What to try next\n",
           (f"Minify the failure (torch writes a `repro.py` under `torch_compile_debug/`; `after={first}` fits this failure"
            + (", a backend that is not AOTAutograd-based" if dynamo_level else "") + "):\n") if c.get("failed") else
           "When a compile fails, minify it (torch writes a `repro.py` under `torch_compile_debug/`):\n",
           md.fence(f"TORCHDYNAMO_REPRO_AFTER={first} TORCHDYNAMO_REPRO_LEVEL=2 {_without_env(target)}\n"
                    f"# if that finds nothing: TORCHDYNAMO_REPRO_AFTER={other}", "sh"),
           "Keep every artifact of the compile (graphs, generated code) and a structured trace for `tlparse`:\n",
           md.fence(f"TORCH_COMPILE_DEBUG=1 TORCH_TRACE=/tmp/trace {_without_env(target)}\ntlparse /tmp/trace", "sh")]
    if ctx.facts.is_spyre:
        out.append("On Spyre, add the transfer log and the compile timing: `TORCH_SPYRE_DEBUG=1 TORCH_SPYRE_TIMING=1`.\n")
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
    red = ("Home folders, user names, host names and secret-looking values were redacted "
           "(`pt2logs bundle --no-redact` keeps them).") if ctx.r("/home/x/") != "/home/x/" else "Nothing was redacted (`--no-redact`)."
    return f"---\n_Made by `pt2logs bundle` from the run's logs. {red}_\n"


def _slug(s: Any) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in str(s or "run"))


#: the report, in order; each returns Markdown or None (nothing to say)
SECTIONS: list[Callable[[Ctx], str | None]] = [title, environment, failure, graphs, guard_failures, advice, spyre, try_next,
                                                footer]

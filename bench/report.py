"""bench/RESULTS.md from a results dict."""

from __future__ import annotations

import datetime as dt
import re


def _f(v: object, nd: int = 2) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.{nd}f}"
    return str(v)


def ab_rows(label: str, ab: dict) -> str:
    """One row of the native-vs-Python table: every run's wall and CPU seconds, and the ratios of the best."""

    def runs(k: str) -> str:
        return (
            " / ".join(f"{w:.2f}" for w, _ in ab[k])
            + " (CPU "
            + " / ".join(f"{c:.2f}" for _, c in ab[k])
            + ")"
        )

    nw, pw = min(w for w, _ in ab["native"]), min(w for w, _ in ab["python"])
    nc, pc = min(c for _, c in ab["native"]), min(c for _, c in ab["python"])
    return f"| {label} | {runs('native')} | {runs('python')} | **{pw / nw:.2f}×** | **{pc / nc:.2f}×** |"


BIG_LOG_NOTE = "The big logs are the real traces (sample_traces/ and the H100 fixtures, 24 MB) one after the other, each copy with its own frame ids: most payloads repeat, and the payload store writes each distinct one once per warehouse. A real long job repeats only the graphs it really recompiles, so the Parquet part of this ingest is cheaper here than it would be there."

AB_HEAD = [
    "The native passes (`pt2logs._native._records`: the splitter — record boundaries, glog prefix, envelope, payload "
    "TAB stripping in one C pass, the payload md5s eight at a time — then the events rows written as Arrow buffers, "
    "the chromium events' spans and compile_phases rows made inside that pass and the cache keys' components in C, "
    "Python seeing only the "
    "records with other handlers) against the pure-Python splitter and record loop (`PT2LOGS_NATIVE=0`), `pt2logs ingest --jobs 1`, "
    "run interleaved A/B/A/B on a machine shared with other work (2 cores, other processes running): wall times are "
    "noisy, CPU seconds (user + system, from `/usr/bin/time`) less so. Ratios compare the best run of each.",
    "",
    "| input | native wall s (CPU s) | Python wall s (CPU s) | wall speed-up | CPU speed-up |",
    "|---|---|---|---|---|",
]


def markdown(r: dict, machine: str, args: str, when: dt.datetime) -> str:
    out = [
        "# Benchmark results",
        "",
        f"Written {when:%Y-%m-%d %H:%M} UTC on {machine}, last with `python -m bench {args}`.",
        "Each section comes from one run of its part of the harness (its time is under its title); every comparison "
        "in it ran side by side on the same files, with the inputs in the page cache. pt2logs runs from bytecode "
        "(compiled once at the start, as `pip install .` leaves it).",
        "",
    ]
    measured = r.get("measured_at", {})

    def title(text: str, section: str) -> list[str]:
        return (
            [text, "", f"_Measured {measured[section]}._", ""]
            if section in measured
            else [text, ""]
        )

    if "ingest" in r:
        out += [
            *title("## Ingest: one big log", "ingest"),
            "pt2logs (`pt2logs ingest FILE --jobs N`, Parquet writes included) vs tlparse as users run it "
            "(`tlparse FILE -o DIR --overwrite --no-browser`, HTML report; and with `--plain-text`) vs the floor "
            "(`python -m bench.floor`: match each header's glog prefix and orjson its JSON, nothing else). "
            "Wall time includes process start.",
            "",
            "| size MB | floor MB/s | pt2logs -j1 MB/s | pt2logs all cores MB/s | tlparse MB/s | tlparse --plain-text MB/s | × tlparse | × tlparse plain | × floor | peak RSS pt2logs -j1 / all / tlparse MB |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for x in r["ingest"]:
            out.append(
                f"| {_f(x['size_mb'], 0)} | {_f(x['floor_mbps'], 0)} | {_f(x['pt2logs_1_mbps'], 0)} | {_f(x['pt2logs_all_mbps'], 0)} "
                f"| {_f(x['tlparse_mbps'], 1)} | {_f(x['tlparse_plain_mbps'], 1)} | **{_f(x['x_tlparse'], 1)}×** | {_f(x['x_tlparse_plain'], 1)}× "
                f"| **{_f(x['x_floor'], 2)}×** | {_f(x['rss_pt2logs_1_mb'], 0)} / {_f(x['rss_pt2logs_all_mb'], 0)} / {_f(x['rss_tlparse_mb'], 0)} |"
            )
        out += ["", BIG_LOG_NOTE, ""]
        out += _ingest_rounds(r["ingest"])
        if any("ab" in x for x in r["ingest"]):
            out += ["### Native vs Python record path", "", *AB_HEAD]
            out += [
                ab_rows(f"{_f(x['size_mb'], 0)} MB log", x["ab"]) for x in r["ingest"] if "ab" in x
            ]
            out.append("")
        with_bound = [x for x in r["ingest"] if "bound_cpu_s" in x]
        if with_bound:
            out += [
                "### Is the floor reachable? The least work of the native design",
                "",
                "`python -m bench.bound FILE` times only what every ingest of a trace does before any handler derives a "
                "table, as pt2logs does it: read + XXH3 the file, the native split (record boundaries, glog prefix, payload "
                "TAB stripping, md5), the native events rows (each envelope read, its row written as Arrow buffers), and "
                "the `events` table as zstd Parquet. No derived tables, no handlers. Spread perfectly over every core, "
                "that is what pt2logs would need if every handler were free:",
                "",
                "| size MB | bound CPU s | bound on all cores s | floor s | pt2logs all cores s | floor ÷ bound |",
                "|---|---|---|---|---|---|",
            ]
            for x in with_bound:
                out.append(
                    f"| {_f(x['size_mb'], 0)} | {_f(x['bound_cpu_s'])} | {_f(x['bound_wall_s'])} | {_f(x['floor_s'])} "
                    f"| {_f(x['pt2logs_all_s'])} | **{_f(x['bound_x_floor'], 2)}×** |"
                )
            x = with_bound[-1]
            steps = ", ".join(f"{k} {_f(v)} s" for k, v in x["bound_steps"].items())
            out += [
                "",
                f"Steps on the {_f(x['size_mb'], 0)} MB log (one core): {steps}.",
                "",
                "The floor skips every payload byte (no md5, no TAB stripping, nothing stored), so even this bound is "
                "close to it; what pt2logs adds on top is the handlers that make the derived tables (the profile below) "
                "and per-process costs (start, imports, the split's prefix scans, the commit).",
                "",
            ]
    if "profile" in r:
        x = r["profile"]
        out += [
            *title("## Where the time goes (one process)", "profile"),
            f"`python -m bench.profile` on the {_f(x['size_mb'], 0)} MB log: {_f(x['wall_s'])} s in one process, split by "
            "cProfile (scaled to the unprofiled wall time).",
            "",
            "| part | s | share |",
            "|---|---|---|",
        ]
        for name, sec in sorted(x["buckets"], key=lambda kv: -kv[1]):
            out.append(f"| {name} | {_f(sec)} | {100 * sec / x['wall_s']:.0f} % |")
        out += [
            "",
            "cProfile charges every Python call a fixed overhead, so the Python buckets read high; "
            "`bench/bound.py` (above) measures the native part directly. C makes the events rows "
            "(`_native/events.c`) and, inside the same pass, handles the chromium events (the most frequent record: "
            "their spans in `phases.c`, their `compile_phases` rows written as Arrow buffers by `phase_cols.c`), the "
            "cache keys' components (`components.c`), and the splitter computes the payload md5s eight at a time "
            "(`md5x8.h`); every native column reaches Arrow without a copy (`buffers.c`). What is left is spread "
            "thin: Parquet (zstd) of the tables, the other handlers in Python (metrics, compile facts, output-code "
            "kernels, caches), the per-record dispatch of the handled records, the Python-made tables' lists → Arrow, "
            "and fixed per-run costs (imports, the DuckDB views file, made in a thread during a pool ingest). The "
            "`compile_phases` args (the chromium events' args: compile configs, ~45 % of a GPU trace's bytes) go to "
            "the payload store, so Parquet no longer compresses every copy; C still writes each copy's canonical "
            "text. Measured and not kept: the `cache_key_components` shared and stamped columns (and the events' "
            "file) carried as Arrow dictionary columns up to the writer, which writes a dictionary array's pages "
            "directly: that table's Parquet went from 0.45 to 0.34 s on the 300 logs and its buffered bytes halved, "
            "but the extra Arrow calls on every small batch took it back (no difference in six interleaved rounds). "
            "Nor did those columns made as dictionaries where the rows are made (each piece's value once, an index "
            "per row, one dictionary per row group, nothing converted per batch): the table's Parquet went from "
            "0.46 to 0.35 s and its buffered bytes from 437 to 237 MB, but Parquet still spends ~20 ns a row on "
            "each dictionary column (~30 on a text one), and four interleaved rounds showed no difference. Parquet's "
            "cost follows rows × columns whatever their encoding. Next design steps: those args deduplicated "
            "inside the C pass (a copy of the first canonical text where the raw args repeat), the events rows of "
            "one flush kept in one set of buffers across native calls, the payload store's keys from the md5 the "
            "C pass already computes, and the compilation_metrics and cache handlers in C.",
            "",
        ]
    if "many" in r:
        x = r["many"]
        out += [
            *title("## Ingest: many runs (`--jobs`)", "many"),
            f"{x['runs']} run folders, {_f(x['size_mb'], 0)} MB: `--jobs 1` {_f(x['jobs1_s'])} s ({_f(x['jobs1_mbps'], 0)} MB/s), "
            f"all cores {_f(x['jobs_all_s'])} s ({_f(x['jobs_all_mbps'], 0)} MB/s): **{_f(x['speedup'])}× speed-up**, peak RSS {_f(x['rss_jobs_all_mb'], 0)} MB."
            + (
                f" Ray engine (local, {x.get('ray_rc')}): {_f(x.get('ray_s'))} s, {_f(x.get('ray_speedup'))}× vs `--jobs 1`."
                if x.get("ray_s")
                else ""
            ),
            "",
        ]
        if "rounds" in x:

            def walls(k: str) -> str:
                r = x["rounds"][k]
                text = (
                    " / ".join(f"{m[0]:.2f}" for m in r)
                    + " (CPU "
                    + " / ".join(f"{m[1]:.2f}" for m in r)
                    + ")"
                )
                return text + (
                    " [others " + " / ".join(f"{m[2]:.1f}" for m in r) + "]"
                    if all(len(m) > 2 for m in r)
                    else ""
                )

            tl = "tlparse_each" in x["rounds"]
            out += [
                f"`--jobs 1`, `--jobs {x['cores']}`"
                + (" and tlparse once per log (below)" if tl else "")
                + " run interleaved, three rounds (the best of each is compared); wall s "
                "(CPU s: user + system of the ingest and its workers, from `/usr/bin/time`) [others: CPU s the rest of "
                "the machine used meanwhile, from /proc/stat: where it nears the wall time, one core was not ours]:",
                "",
                "| run | wall s (CPU s) [others], round by round | best wall | best CPU |",
                "|---|---|---|---|",
                f"| 1 | {walls('jobs1')} | {_f(x['jobs1_s'])} | {_f(x['jobs1_cpu_s'])} |",
                f"| {x['cores']} | {walls('jobs_all')} | {_f(x['jobs_all_s'])} | {_f(x['jobs_all_cpu_s'])} |",
            ]
            if tl:
                out += [
                    f"| tlparse per log, one after the other | {walls('tlparse_each')} | {_f(x.get('tlparse_each_s'))} | "
                    f"{_f(min(m[1] for m in x['rounds']['tlparse_each']))} |",
                    f"| tlparse per log, all cores | {walls('tlparse_each_all')} | {_f(x.get('tlparse_each_all_s'))} | "
                    f"{_f(min(m[1] for m in x['rounds']['tlparse_each_all']))} |",
                ]
            out.append("")
        if "ab" in x:
            out += [
                "Native vs Python record path on these runs:",
                "",
                *AB_HEAD,
                ab_rows(f"{x['runs']} runs", x["ab"]),
                "",
            ]
        if x.get("tlparse_each_s"):
            out += [
                "tlparse as its users run it on the same jobs: one `tlparse LOG -o DIR --overwrite --no-browser` per log "
                f"(`python -m bench.tlparse_each`): one after the other {_f(x['tlparse_each_s'])} s ({_f(x['tlparse_each_mbps'], 1)} MB/s), "
                f"all cores busy {_f(x['tlparse_each_all_s'])} s ({_f(x['tlparse_each_all_mbps'], 1)} MB/s). "
                f"Speed ratio (tlparse wall ÷ pt2logs wall): pt2logs all cores vs that loop **{_f(x['x_tlparse_each'], 1)}×** "
                f"({_f(x['x_tlparse_each_1'], 1)}× with `--jobs 1`), vs tlparse on all cores **{_f(x['x_tlparse_each_all'], 1)}×**.",
                "",
            ]
    if "reingest" in r:
        x = r["reingest"]
        out += [
            *title("## Re-ingest of an unchanged corpus", "reingest"),
            f"{x['runs']} runs ({_f(x['size_mb'], 0)} MB): first ingest {_f(x['first_s'])} s, again {_f(x['again_s'])} s "
            f"= **{_f(x['ratio_pct'], 1)} %** of the first ({x['unchanged']} unchanged, {x['new']} new).",
            "",
        ]
    if "bombs" in r:
        out += [
            *title("## Compression bombs: memory", "bombs"),
            "A real trace followed by gigabytes of zeros or of newlines, gzipped (`bench/bombs.py`), ingested in one "
            "process; peak RSS is the process's high-water mark. Decompression is bounded to 4 MB of output per call, "
            "and the trace reader bounds what it holds (a payload up to 24 MiB, a line up to 64 MiB, the rest counted "
            "and reported). The bound is 300 MB for every input. Before: 13.3 GB (zeros) and OOM-killed at 23.7 GB "
            "(newlines).",
            "",
            "| after the trace | content MB | .gz MB | peak RSS MB | wall s | events | outcome |",
            "|---|---|---|---|---|---|---|",
        ]
        for x in r["bombs"]:
            outcome = x["killed"] or (f"exit {x['rc']}: {x['error_tail']}" if x["rc"] else "ok")
            out.append(
                f"| {x['fill']} | {x['content_mb']:,} | {_f(x['gz_mb'], 1)} | **{_f(x['peak_rss_mb'], 0)}** "
                f"| {_f(x['wall_s'], 1)} | {_f(x['events'])} | {outcome} |"
            )
        out.append("")
    if "hostile" in r:
        out += [
            *title("## Bombs: documents, lines and blank lines", "hostile"),
            "Inputs built to blow up the readers (issue 31; `bench/hostile.py`), generated and ingested one per "
            "process (in-process engine), peak RSS = the process's high-water mark, CPU = its CPU seconds (on a shared machine, the figure to compare: wall seconds also count the others' work). `before` "
            "is the code before the readers' limits (`--bomb-before SRC`), at a smaller size where it needs minutes "
            "(the issue measured the full sizes before: a 179 MB counters.json 2.65 GB, a 249 MB timing record 1.6 GB, "
            "a .gz of one 5 GB line 1.4 GB and 82 s, 100 MB of newlines 182 CPU s); `after` is this tree. "
            "An `after` error is the `too_large` of a document past its cap, a warning a `line_too_long` or "
            '`message_too_long`. The limits (docs/inputs.md, "Limits: hostile inputs"): JSON documents read whole '
            "up to 8 MiB (past that a `too_large` error), text documents their lines up to 16 MiB (a `too_large` warning); a text line keeps 1 MiB, the rest "
            "is passed over (`line_too_long`); a run of blank lines is one item; one message holds 16 MiB. "
            "The bound is 300 MB for every input.",
            "",
            "| bomb | code | content MB | on disk MB | peak RSS MB | wall s | CPU s | errors / warnings | outcome |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for x in r["hostile"]:
            outcome = x["killed"] or (f"exit {x['rc']}: {x['error_tail']}" if x["rc"] else "ok")
            out.append(
                f"| {x['what']} | {x['code']} | {x['content_mb']:,} | {_f(x['stored_mb'], 1)} "
                f"| **{_f(x['peak_rss_mb'], 0)}** | {_f(x['wall_s'], 1)} | {_f(x['cpu_s'], 1)} "
                f"| {_f(x['errors'])} / {_f(x['warnings'])} | {outcome} |"
            )
        out.append("")
    if "realfleet" in r:
        from bench.realfleet import markdown as realfleet_md

        out += [
            *title("## Memory over a real-shaped fleet", "realfleet"),
            *realfleet_md(r["realfleet"]),
        ]
    if "fleet" in r:
        x = r["fleet"]
        out += [
            *title(f"## Fleet queries over {x['runs']:,} runs", "fleet"),
            "Synthesized from the sample runs (8 weeks of start times, tags model/cluster). Every named query with default "
            "parameters (fleet-wide; the queries about one run, trace_events and bug_report_artifacts, the newest run), "
            "then the dashboard.",
            "",
            "| query | ms | rows |",
            "|---|---|---|",
        ]
        for name, s, n in x["queries"]:
            out.append(f"| {name} | {s * 1000:,.0f} | {n} |")
        out += [
            "",
            f"Dashboard build: {_f(x['dashboard_s'])} s"
            + ("" if x.get("dashboard_rc") == 0 else f" (exit {x.get('dashboard_rc')})"),
            "",
        ]
        if x.get("peaks"):
            out += [
                "Peak RSS of the CLI over the fleet (the terminal table lays out at most 1,000 rows and counts the rest):",
                "",
                "| command | s | peak RSS MB | exit |",
                "|---|---|---|---|",
            ]
            out += [
                f"| {label} | {_f(s, 1)} | {_f(mb, 0)} | {rc} |" for label, s, mb, rc in x["peaks"]
            ]
            out.append("")
    if "storage" in r:
        x = r["storage"]
        out += [
            *title("## Warehouse size ÷ input size", "storage"),
            "`python -m bench.storage`: runs ingested into a fresh warehouse; every byte under the warehouse "
            "(Parquet, manifests, pt2logs.duckdb) divided by the input bytes. With the payload store (each distinct "
            "`events` payload and `compile_phases` args once per warehouse, keyed by the XXH3-128 of its bytes; "
            "docs/warehouse.md) and without it (`PT2LOGS_PAYLOAD_STORE=0`: every text zstd-compressed in its row, "
            "as before the store).",
            "",
            "| corpus | runs | input MB | warehouse MB without the store | warehouse MB | warehouse ÷ input without the store | warehouse ÷ input | ingest CPU s without / with |",
            "|---|---|---|---|---|---|---|---|",
        ]
        labels = (
            ("one_model", "one model (the same real trace as every run)"),
            ("mixed", "mixed (every source trace in turn)"),
        )
        for name, label in labels:
            y = x[name]
            out.append(
                f"| {label} | {y['runs']} | {_f(y['input_mb'], 1)} | {_f(y.get('warehouse_mb_inline'), 1)} "
                f"| {_f(y['warehouse_mb'], 1)} | {_f(y.get('ratio_pct_inline'), 1)} % | **{_f(y['ratio_pct'], 1)} %** "
                f"| {_f(y.get('ingest_cpu_s_inline'), 1)} / {_f(y.get('ingest_cpu_s'), 1)} |"
            )
        if "where" in x["one_model"]:
            out += [
                "",
                "Where the bytes go (MB of Parquet; the largest tables, and the largest columns of `events`):",
                "",
                "| corpus | | without the store | with the store |",
                "|---|---|---|---|",
            ]
            for name, _label in labels:
                y = x[name]
                for kind, top in (("tables_mb", "table"), ("events_columns_mb", "events column")):
                    with_, without = y["where"][kind], y["where_inline"][kind]
                    for k in sorted(
                        set(with_) | set(without),
                        key=lambda k: -max(with_.get(k, 0), without.get(k, 0)),
                    )[:5]:
                        out.append(
                            f"| {name} | {top} `{k}` | {_f(without.get(k, 0.0))} | {_f(with_.get(k, 0.0))} |"
                        )
        out.append("")
    if "one_trace" in r:
        from bench.one_trace import markdown as one_trace_markdown

        out += one_trace_markdown(
            r["one_trace"], title("## One GPU trace: pt2logs vs tlhub vs tlparse", "one_trace")
        )
    if "serve" in r:
        from bench.serve import markdown as serve_markdown

        out += serve_markdown(r["serve"], title("## pt2logs serve: page latency", "serve"))
    if "commands" in r:
        from bench.commands import markdown as commands_markdown

        out += [
            *title("## Start and the commands about one run (issue 36)", "commands"),
            *commands_markdown(r),
        ]
    out += _targets(r)
    return "\n".join(out) + "\n"


#: the contenders of the one-big-log rounds, as the table above names them
_ROUND_NAMES = {
    "floor": "floor",
    "pt2logs_1": "pt2logs -j1",
    "pt2logs_all": "pt2logs all cores",
    "tlparse": "tlparse",
    "tlparse_plain": "tlparse --plain-text",
}


def _ingest_rounds(rows: list[dict]) -> list[str]:
    """Every round's wall seconds of each contender (the table above takes the best of each)."""
    with_rounds = [x for x in rows if "rounds" in x]
    if not with_rounds:
        return []
    n = len(next(iter(with_rounds[0]["rounds"].values())))
    out = [
        f"Each contender ran once per round, {n} rounds interleaved (the machine is shared and its speed drifts); "
        "the table takes the best wall time of each, and the worst peak memory. Wall seconds of every round:",
        "",
    ]
    for x in with_rounds:
        runs = "; ".join(
            f"{label} " + " / ".join(f"{w:.2f}" for w in x["rounds"][k])
            for k, label in _ROUND_NAMES.items()
            if k in x["rounds"]
        )
        out.append(f"- {_f(x['size_mb'], 0)} MB: {runs}.")
    return out + [""]


def _why(r: dict, big: dict) -> list[str]:
    """Why the ingest targets are not met, from this run's figures."""
    bx, x3 = big["bound_x_floor"], big["x_tlparse"]
    bound = (
        f"runs at {_f(bx)}× the floor's speed"
        if bx >= 1
        else f"takes {_f(1 / bx)}× the floor's time"
    )
    return [
        "",
        f"Why the ingest targets are not met: the least work of the native design (`bench/bound.py`: read, split, "
        f"md5, the events rows and their Parquet, no handler at all) spread perfectly over the cores {bound} on the "
        f"{_f(big['size_mb'], 0)} MB trace, while the whole ingest runs at {_f(big['x_floor'])}× it: every derived "
        "table, its handler in Python and its Parquet come on top (the profile above: no part is more than a quarter "
        "of the time). Reaching 1× the floor needs every handler and the Parquet writes of the derived tables in "
        f"the native pass; 3× tlparse needs the ingest to take {100 * (1 - x3 / 3):.0f} % less time than now. The 300 "
        "logs pay fixed costs per run, one core idle meanwhile (as measured on 2026-11-26: start and imports ~0.3 s, "
        "discovery ~0.18 s, the workers' last Parquet writes and the commit ~0.17 s, the views file ~0.24 s) beside "
        f"{_f(r.get('many', {}).get('jobs_all_cpu_s'), 1)} CPU s of parsing.",
    ]


def _targets(r: dict) -> list[str]:
    """The ingest issue's targets, each against the figure of the section above that measures it."""
    rows: list[tuple[str, str, bool]] = []
    big = max(r.get("ingest", []), key=lambda x: x["size_mb"], default=None)
    if big is not None:
        rows += [
            (
                f"one {_f(big['size_mb'], 0)} MB trace, both cores: ≥ 3× tlparse",
                f"{_f(big['x_tlparse'])}×",
                big["x_tlparse"] >= 3,
            ),
            (
                "the same: ≥ 1× the bare scan (the floor)",
                f"{_f(big['x_floor'])}×",
                big["x_floor"] >= 1,
            ),
        ]
        for x in r["ingest"]:
            rss = max(x["rss_pt2logs_1_mb"], x["rss_pt2logs_all_mb"])
            rows.append(
                (
                    f"peak RSS ≤ 300 MB, {_f(x['size_mb'], 0)} MB trace",
                    f"{_f(rss, 0)} MB",
                    rss <= 300,
                )
            )
    if "many" in r and r["many"].get("x_tlparse_each"):
        x = r["many"]
        rows.append(
            (
                f"{x['runs']} job logs: ≥ 10× tlparse run once per log",
                f"{_f(x['x_tlparse_each'], 1)}×",
                x["x_tlparse_each"] >= 10,
            )
        )
    if "storage" in r:
        pct = r["storage"]["one_model"]["ratio_pct"]
        rows.append(
            ("warehouse ≤ 5 % of the input, 100 runs of one model", f"{_f(pct, 1)} %", pct <= 5)
        )
    if "fleet" in r:
        x = r["fleet"]
        slowest = max(x["queries"], key=lambda q: q[1])
        rows += [
            (
                f"every named query ≤ 1 s at {x['runs']:,} runs",
                f"slowest {slowest[0]} {slowest[1] * 1000:,.0f} ms",
                slowest[1] <= 1,
            ),
            (
                f"dashboard ≤ 10 s at {x['runs']:,} runs",
                f"{_f(x['dashboard_s'])} s",
                x["dashboard_s"] <= 10,
            ),
        ]
    from bench.commands import targets as command_targets

    rows += command_targets(r)
    if not rows:
        return []
    out = [
        "## Targets",
        "",
        "Each against the figure of the section above that measures it (its own run and time).",
        "",
        "| target | measured | met |",
        "|---|---|---|",
    ] + [f"| {t} | {m} | {'yes' if ok else '**no**'} |" for t, m, ok in rows]
    if big is not None and big.get("bound_x_floor"):
        out += _why(r, big)
    return out + [""]


def keep_sections(new: str, old: str) -> str:
    """``new`` (this run's RESULTS.md) with every ``## `` section of ``old`` that this run did not
    write kept where it was: a partial run (``--only X``) replaces its own sections, not the others."""

    def split(text: str) -> tuple[str, dict[str, str]]:
        head, *parts = text.split("\n## ")
        # a section is known by its heading, figures aside ("Fleet queries over 10,000 runs")
        return head, {
            re.sub(r"[\d,.]+", "#", p.split("\n", 1)[0]): "## " + p.rstrip("\n") + "\n"
            for p in parts
        }

    head, fresh = split(new)
    _, kept = split(old)
    order = list(kept) + [k for k in fresh if k not in kept]
    return head.rstrip("\n") + "\n\n" + "\n".join(fresh.get(k) or kept[k] for k in order)

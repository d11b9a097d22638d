"""``pt2logs dashboard``: one self-contained HTML page of charts (and, on request, images).

Registered on the main group by :mod:`pt2logs.cli` (``main.add_command(dashboard)``). The work is
done by :mod:`pt2logs.dashboard`; this module parses options, writes the files, and keeps the
chart library (the Vega bundle, seconds to build) cached between runs.
"""

from __future__ import annotations

import os

import click

from pt2logs.cli.options import connect_warehouse as _connect
from pt2logs.cli.options import filter_options, query_error, warehouse_option


@click.command()
@warehouse_option
@filter_options
@click.option(
    "--by", metavar="TAG", help="Split the compile-time trend by this tag key, e.g. --by model."
)
@click.option(
    "--run",
    "run",
    help="A one-run page for this run (id, id prefix or name) instead of the weekly one.",
)
@click.option(
    "--out",
    "-o",
    default="pt2logs_dashboard.html",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="The HTML file to write.",
)
@click.option(
    "--png",
    "png_dir",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Also write each chart as a PNG into DIR (for pasting into a note).",
)
@click.option(
    "--svg",
    "svg_dir",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Also write each chart as an SVG into DIR.",
)
@click.option(
    "--dashboard",
    "name",
    metavar="NAME",
    help="Which dashboards/NAME.toml to build (default: weekly, or run with --run).",
)
@click.option(
    "--threshold",
    default=10.0,
    show_default=True,
    metavar="PCT",
    help="Flag a regression when a metric per run grew more than PCT % week over week.",
)
def dashboard(
    warehouse: str,
    since: str | None,
    until: str | None,
    tag: str | None,
    by: str | None,
    run: str | None,
    out: str,
    png_dir: str | None,
    svg_dir: str | None,
    name: str | None,
    threshold: float,
) -> None:
    """Write an HTML dashboard: is compilation getting healthier?

    A headline strip (this week against the week before: compile time, recompiles, graph breaks,
    failures, regressions flagged), then compile time per run by phase over time, recompiles by
    cause over time, graph-break hotspots, kernels, cache hit rates, failures and the slowest
    frames; with --by, the runs that hung, were killed, crashed or failed this week per tag value.
    The file works offline (the chart library is inside it); hover a mark for details.
    Runs of the last 4 weeks unless --since says otherwise. --run RUN makes a one-run page
    (how it ended with the evidence, compile waterfall, where each rank stopped, recompile
    chains, breaks, kernels, caches); --dashboard vllm: vLLM cold starts (bytecode transform,
    compiles per range, cache loads, CUDA graph capture).

    \b
    Examples:
      pt2logs dashboard                                  # → pt2logs_dashboard.html
      pt2logs dashboard --since 8w --by model -o weekly.html --png charts/
      pt2logs dashboard --run nightly-1122 -o run.html
      pt2logs dashboard --dashboard vllm --since 8w     # vLLM cold starts: cold vs warm per model
    """
    from pt2logs.dashboard import DashboardError, build, images, render_html
    from pt2logs.query.queries import QueryError

    con = _connect(warehouse)
    try:
        page = build(
            con,
            name,
            since=since or ("4w" if not run else None),
            until=until,
            tag=tag,
            by=by,
            run=run,
            warehouse=warehouse,
            threshold=threshold,
        )
        text = render_html(page, bundle=cached_vega_bundle())
    except QueryError as e:
        raise query_error(e) from None  # a --run or --tag naming no run: a usage error
    except DashboardError as e:
        raise click.ClickException(str(e)) from None
    from pathlib import Path

    path = Path(out)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    charts = [c for c in page.cards if c.spec is not None]
    empty = [c.key for c in page.cards if c.spec is None and not c.error]
    failed = [c.key for c in page.cards if c.error]
    click.echo(
        f"wrote {path} ({len(text) / 1e6:.1f} MB): {len(charts)} charts"
        + (f", empty: {', '.join(empty)}" if empty else "")
        + f"; {page.scope}; built in {page.build_s:.1f} s"
    )
    for fmt, folder in (("png", png_dir), ("svg", svg_dir)):
        if folder is None:
            continue
        d = Path(folder)
        d.mkdir(parents=True, exist_ok=True)
        try:
            files = images(page, fmt)
        except DashboardError as e:
            raise click.ClickException(str(e)) from None
        for fname, data in files:
            (d / fname).write_bytes(data)
        click.echo(f"wrote {len(files)} {fmt.upper()} image(s) to {d}/")
    for c in page.cards:
        if c.error:
            click.echo(f"warning: section {c.key} could not be built: {c.error}", err=True)
    if failed:
        raise SystemExit(1)


def cached_vega_bundle() -> str:
    """The Vega bundle, from ``$PT2LOGS_CACHE`` (default ``~/.cache/pt2logs``, or under
    ``$XDG_CACHE_HOME``) when a whole copy is there, else built and stored there for next time.
    A cache that cannot be read or written only costs the seconds to build it."""
    from pathlib import Path

    from pt2logs.dashboard import bundle_name, is_bundle, vega_bundle

    cache = Path(
        os.environ.get("PT2LOGS_CACHE")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pt2logs"
    )
    path = cache / bundle_name()
    try:
        text = path.read_text()
        if is_bundle(text):
            return text
    except OSError:
        pass
    text = vega_bundle()
    try:
        cache.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
    except OSError:
        pass
    return text

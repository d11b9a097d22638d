"""``pt2logs serve``: the warehouse as a local, read-only web app (:mod:`pt2logs.serve`).

This module checks the warehouse, binds the socket, prints the URL and runs uvicorn in the foreground
until Ctrl-C; it hands the app the row writers of ``--format json`` / ``csv`` (:mod:`pt2logs.cli.outputs`)
so that a ``/query/NAME?format=json`` page is what ``pt2logs query NAME -f json`` prints.
"""

from __future__ import annotations

import click

from pt2logs.cli.options import warehouse_option
from pt2logs.cli.outputs import OUTPUT_FORMATS


@click.command()
@warehouse_option
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address to listen on. The default answers this machine only; 0.0.0.0 exposes the warehouse to the network.",
)
@click.option("--port", default=8765, show_default=True, help="The port (0: any free port).")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a browser.")
def serve(warehouse: str, host: str, port: int, open_browser: bool) -> None:
    """Browse the warehouse in a local web app: fleet → runs → one compile, graph diffs.

    Read-only. Pages: / (the weekly dashboard, live: ?since=7d&tag=model=llama&by=model), /runs
    (sort, search, ?outcome=hung), /runs/RUN, /runs/RUN/compiles/0/1 (graphs, code, guards, breaks,
    kernels, caches, failure), /sites/SITE, /diff/A/B (?compile_a=0/0&compile_b=0/1: an FX graph
    diff), /query/NAME. Every page also answers ?format=json (and ?format=csv for its table).
    New ingests show up without a restart. Ctrl-C stops it.

    \b
    Examples:
      pt2logs serve                          # http://127.0.0.1:8765/
      pt2logs serve -w s3://bucket/wh --port 0 --open
    """
    from pt2logs.serve.app import create_app
    from pt2logs.serve.server import bind, make_server, url_of
    from pt2logs.store.warehouse import Warehouse

    if not Warehouse(warehouse).exists():
        raise click.UsageError(
            f"no warehouse at {warehouse}: create one with `pt2logs ingest PATH --warehouse {warehouse}`"
        )
    app = create_app(warehouse, {"json": OUTPUT_FORMATS["json"], "csv": OUTPUT_FORMATS["csv"]})
    try:
        sock = bind(host, port)
    except OSError as e:
        raise click.ClickException(
            f"cannot listen on {host}:{port}: {e.strerror or e}; try --port 0 (any free port)"
        ) from None
    url = url_of(sock)
    click.echo(f"pt2logs serve: {warehouse} at {url} (read-only; Ctrl-C stops)", err=False)
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    server = make_server(app)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
        app.state.store.close()
    click.echo("pt2logs serve: stopped")

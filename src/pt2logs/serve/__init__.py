"""``pt2logs serve``: a read-only local web app over a warehouse, from the fleet down to one graph.

    connection.py  the one DuckDB connection; views made again when a commit lands
    render.py      Jinja templates (autoescaped), ?format=json / csv, URLs of runs, compiles, sites, queries
    pages_fleet.py /  (the weekly dashboard, live), /runs, /query/NAME, /queries
    pages_run.py   /runs/RUN, /runs/RUN/compiles/ID
    highlight.py   graphs and code highlighted (Pygments), each distinct text once (a bounded cache)
    pages_diff.py  /diff/A/B (the diff report; ?compile_a=&compile_b=: an FX graph diff), /sites/SITE
    graphdiff.py   FX graphs as printed → nodes; two graphs compared (nodes, op counts, unified diff)
    app.py         create_app(): routes, assets in memory, errors as pages
    server.py      uvicorn on a socket bound first (foreground or a thread)
    templates/ static/   the pages' markup, script and style (no CDN: the Vega bundle comes from vl-convert)

Every number comes from a named query (``queries/*.sql``) or a report of :mod:`pt2logs.reports.compose`, so a
page agrees with the CLI. docs/serve.md describes the URLs.
"""

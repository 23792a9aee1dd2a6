"""`zoo ui` (the store in a browser) and `zoo report` (the same views as one HTML file).

Both need zoo's optional extra ``ui``; zoo.web is imported only when one of them runs, so
no other command pays for it.
"""

from __future__ import annotations


def cmd_ui(args) -> int:
    from zoo import api
    from zoo.home import zoo_home

    server = api.ui(host=args.host, port=args.port)
    print(f"zoo ui: {zoo_home()} (read-only) at {server.url}  (Ctrl-C stops it)", flush=True)
    server.run()
    return 0


def cmd_report(args) -> int:
    from zoo import api
    from zoo.cli.options import emit_text

    html = api.report(
        where=args.where,
        metric=args.metric,
        by=args.by,
        columns=args.columns,
        baseline=args.baseline,
        title=args.title,
    )
    emit_text(html, args.output)
    return 0


def port_number(text: str) -> int:
    import argparse

    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is a number from 0 to 65535, not {text!r}")
    return port


def add_commands(commands) -> None:
    p = commands.add_parser(
        "ui",
        help="browse the store in a web browser (read-only)",
        description="Serve the runs, their comparison, curves, each run's page, tune "
        "studies and ensembles as a local web application. It only reads the store (runs "
        "training meanwhile show up); it listens on 127.0.0.1 unless --host says otherwise. "
        "Needs the ui extra: pip install 'zoo[ui]'.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument(
        "--port",
        type=port_number,
        default=8765,
        metavar="N",
        help="port (default 8765; 0: any free one)",
    )
    p.set_defaults(handler=cmd_ui)
    p = commands.add_parser(
        "report",
        help="write the runs, comparison, curves and run pages as one HTML file",
        description="One self-contained HTML file (scripts, styles and data inside it; it "
        "makes no network request when opened) with the views of zoo ui for the runs "
        "--where selects. Needs the ui extra: pip install 'zoo[ui]'.",
    )
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the .html file to write")
    p.add_argument("--where", metavar="EXPR", help="the runs to include (as zoo runs --where)")
    p.add_argument("--metric", help="the comparison's metric (as zoo compare --metric)")
    p.add_argument("--by", metavar="KEYS", help="the comparison's rows (as zoo compare --by)")
    p.add_argument(
        "--columns", metavar="KEYS", help="the comparison's columns (as zoo compare --columns)"
    )
    p.add_argument("--baseline", metavar="ROW", help="as zoo compare --baseline")
    p.add_argument("--title", default="zoo report", help="the page's title")
    p.set_defaults(handler=cmd_report)

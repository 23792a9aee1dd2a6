"""`zoo ui`: a read-only Starlette application over the store, served by uvicorn.

Pages are rendered by Jinja2 templates (zoo/web/templates) from the data zoo.web.views
builds; charts are drawn in the browser by plotly.js, served from the ``plotly`` package
(nothing is fetched from the network). Only GET and HEAD are answered; the store is opened
read-only for each read; a URL names a run by its id (checked against zoo's run id form
before anything is looked up) or one of the few static files by name, never a path.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from pathlib import Path

from zoo.web import views

HERE = Path(__file__).parent
STATIC = {  # the files /static/NAME serves, by name only
    "zoo.css": ("text/css", lambda: (HERE / "static" / "zoo.css").read_bytes()),
    "zoo.js": ("text/javascript", lambda: (HERE / "static" / "zoo.js").read_bytes()),
    "plotly.min.js": ("text/javascript", lambda: plotly_js().encode()),
}


def plotly_js() -> str:
    """plotly.js as the ``plotly`` package ships it (plotly/package_data/plotly.min.js)."""
    from importlib.resources import files

    return (files("plotly") / "package_data" / "plotly.min.js").read_text(encoding="utf-8")


def templates():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["cell"] = cell_text
    env.globals["url"] = url
    env.policies["json.dumps_kwargs"] = {"default": str}  # a tuple-valued setting, a date
    return env


def url(path: str, **params) -> str:
    """``path`` with the parameters that have a value, as a query string."""
    from urllib.parse import urlencode

    given = {k: v for k, v in params.items() if v not in (None, "")}
    return path + ("?" + urlencode(given) if given else "")


def cell_text(value) -> str:
    """A table cell: numbers with about four significant digits, as zoo's tables show them."""
    from zoo.comparison.render import number

    if value is None:
        return ""
    if isinstance(value, float):
        return number(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


def create_app(home: str | Path):
    """The application over the store in ``home`` (ZOO_HOME): the routes below, each a
    page rendered from the data zoo.web.views builds."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.routing import Route

    from zoo.errors import ZooError

    store = views.StoreView(home)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        # once serving: the first page and the table of all runs, before anyone asks
        threading.Thread(target=views.read_ahead, args=(store,), daemon=True).start()
        yield

    app = Starlette(
        lifespan=lifespan,
        routes=[
            Route("/", home_page),
            Route("/runs", runs),
            Route("/runs/{run_id}", run),
            Route("/compare", compare),
            Route("/curves", curves),
            Route("/api/curves", curves_json),
            Route("/tune", tune),
            Route("/static/{name}", static),
            Route("/favicon.ico", no_icon),
        ],
        exception_handlers={
            HTTPException: not_found,
            views.NotFound: not_found,
            ZooError: zoo_error,
        },
    )
    app.state.store, app.state.env = store, templates()
    return app


# -- the routes: each reads the store through request.app.state.store ----------------
def page(request, name: str, status: int = 200, **context):
    from starlette.responses import HTMLResponse

    state = request.app.state
    html = state.env.get_template(name).render(report=False, home=str(state.store.home), **context)
    return HTMLResponse(html, status_code=status)


def runs(request):
    q = request.query_params
    data = views.runs_page(
        request.app.state.store,
        where=q.get("where"),
        sort=q.get("sort"),
        columns=q.get("columns"),
        page=_int(q.get("page"), 1),
    )
    return page(request, "runs.html", data=data, view="runs")


def run(request):
    data = views.run_page(request.app.state.store, request.path_params["run_id"])
    return page(request, "run.html", data=data, view="runs")


def compare(request):
    data = views.comparison(request.app.state.store, dict(request.query_params))
    return page(request, "compare.html", data=data, view="compare", charts=True)


def curves_data(request) -> dict:
    q = request.query_params
    return views.curves(
        request.app.state.store,
        q.getlist("run"),
        metric=q.get("metric") or "loss",
        x=q.get("x") or "step",
    )


def curves(request):
    return page(request, "curves.html", data=curves_data(request), view="curves", charts=True)


def curves_json(request):
    from starlette.responses import JSONResponse

    return JSONResponse(curves_data(request))


def tune(request):
    store = request.app.state.store
    studies = views.studies(store)
    return page(
        request,
        "tune.html",
        studies=studies,
        tables=views.budget_tables(studies),
        ensembles=views.ensembles(store),
        view="tune",
        charts=True,
    )


def static(request):
    from starlette.exceptions import HTTPException
    from starlette.responses import Response

    name = request.path_params["name"]
    if name not in STATIC:
        raise HTTPException(404, f"no file {name!r}")
    kind, read = STATIC[name]
    return Response(read(), media_type=kind, headers={"Cache-Control": "max-age=3600"})


def no_icon(request):
    from starlette.responses import Response

    return Response(status_code=204)


def home_page(request):
    from starlette.responses import RedirectResponse

    return RedirectResponse("/runs", status_code=302)


async def not_found(request, exc):
    detail = getattr(exc, "detail", None) or str(exc) or "not found"
    status = getattr(exc, "status_code", 404)
    return page(request, "error.html", status=status, message=detail, view="")


async def zoo_error(request, exc):
    return page(request, "error.html", status=400, message=str(exc), view="")


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text else default
    except ValueError:
        return default


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: a free one), bound before the server starts, so the URL
    printed is the one served."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


class Server:
    """uvicorn serving the application on a bound socket; ``run`` blocks, ``start`` serves
    from a thread (tests, the benchmark), ``stop`` ends it."""

    def __init__(self, home: str | Path, host: str = "127.0.0.1", port: int = 0):
        import uvicorn

        self.socket = bind(host, port)
        self.host, self.port = self.socket.getsockname()[:2]
        config = uvicorn.Config(create_app(home), log_level="warning", access_log=False)
        self.server = uvicorn.Server(config)
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def run(self) -> None:
        self.server.run(sockets=[self.socket])

    def start(self) -> Server:
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()
        while not self.server.started and self.thread.is_alive():
            threading.Event().wait(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout=10)
        self.socket.close()

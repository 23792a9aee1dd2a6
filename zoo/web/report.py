"""`zoo report`: the views of `zoo ui` in one self-contained HTML file.

The same templates render the runs, the comparison, the curves, the tune studies and
ensembles and each run's page into one page whose links are anchors; the styles, zoo's
script, plotly.js (from the ``plotly`` package) and every view's data are inside the file,
so it opens offline and asks the network for nothing.
"""

from __future__ import annotations

import time
from pathlib import Path

from zoo.web import views

MAX_RUN_PAGES = 200  # run pages in one report; --where narrows a larger selection
MAX_CURVES = 50  # runs whose curves are drawn together


def report_html(
    home: str | Path,
    *,
    where: str | None = None,
    metric: str | None = None,
    by: str | None = None,
    columns: str | None = None,
    baseline: str | None = None,
    title: str = "zoo report",
) -> str:
    """The report of the runs ``where`` selects (all runs without it) in the store at
    ``home``, with the ensembles among them and every tune study; a condition `zoo runs`
    refuses is a ZooError, as there."""
    from markupsafe import Markup

    from zoo.errors import ZooError
    from zoo.web.app import HERE, plotly_js, templates

    view = views.StoreView(home)
    studies = views.studies(view)
    runs = views.runs_page(view, where=where, per_page=10**9)
    if runs["error"]:
        raise ZooError(runs["error"])
    ids = [row["id"] for row in runs["rows"]]
    trained = [row["id"] for row in runs["rows"] if row.get("kind") == "train"]
    comparison = views.comparison(
        view, {"where": where, "metric": metric, "by": by, "columns": columns, "baseline": baseline}
    )
    notes = []
    if len(trained) > MAX_CURVES:
        notes.append(f"curves of the newest {MAX_CURVES} of {len(trained)} trained runs drawn")
    if len(ids) > MAX_RUN_PAGES:
        notes.append(
            f"pages of the newest {MAX_RUN_PAGES} of {len(ids)} runs included; "
            "zoo report --where selects fewer"
        )
    inline = {
        "css": Markup((HERE / "static" / "zoo.css").read_text(encoding="utf-8")),
        "js": Markup(_script((HERE / "static" / "zoo.js").read_text(encoding="utf-8"))),
        "plotly": Markup(_script(plotly_js())),
    }
    return (
        templates()
        .get_template("report.html")
        .render(
            report=True,
            home=str(view.home),
            view="",
            title=title,
            written=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            inline=inline,
            runs=runs,
            comparison=comparison,
            curves=views.curves(view, trained[:MAX_CURVES]),
            studies=studies,
            tables=views.budget_tables(studies),
            ensembles=[e for e in views.ensembles(view) if e["id"] in ids],
            pages=[views.run_page(view, run_id) for run_id in ids[:MAX_RUN_PAGES]],
            notes=notes,
        )
    )


def _script(text: str) -> str:
    """Script text safe inside <script>...</script>: no closing tag inside it."""
    return text.replace("</script", "<\\/script").replace("<!--", "<\\!--")

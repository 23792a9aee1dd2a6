"""zoo ui and zoo report in a real browser: Debian's chromium, headless, driven by
Playwright (zoo.web.browser; never a browser Playwright downloads). The pages load and draw,
a filter narrows the runs, a run's page opens, an unknown run is a 404 page, the curves draw,
follow the controls and are read again while a run trains, and the report opens with the
network cut off and asks it for nothing. One store, server and browser serve the module.
Skipped, with the reason, where chromium or Playwright is missing (scripts/setup.sh
installs both)."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli
from test_ui import add_run

pytest.importorskip("starlette", reason="zoo ui needs the ui extra: pip install 'zoo[ui]'")
pytest.importorskip("playwright", reason="the browser tests need playwright (the test extra)")

from zoo.web.chromium import chromium_path, headless_chromium  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        chromium_path() is None, reason="no chromium found (apt-get install chromium)"
    ),
]


@pytest.fixture(scope="module")
def browser():
    with headless_chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def store_home(tmp_path_factory):
    """Two models at two seeds, and a run still training (this process's: never stale)."""
    home = tmp_path_factory.mktemp("ui-browser") / "runs"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ZOO_HOME", str(home))
        for seed in range(2):
            add_run(f"r-a-{seed}", "decoder-char", seed, 2.0 + 0.1 * seed, created=1e9 + seed)
            add_run(f"r-b-{seed}", "lstm-char", seed, 2.5 + 0.1 * seed, lr=3e-3, created=2e9 + seed)
        add_run("r-live", "decoder-char", 7, 2.2, status="running", created=3e9)
    return home


@pytest.fixture(scope="module")
def server(store_home):
    from zoo.web import views
    from zoo.web.app import Server

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(views, "REFRESH_SECONDS", 0.5)  # a training run's curves, read again
        running = Server(store_home).start()
        try:
            yield running
        finally:
            running.stop()


@pytest.fixture
def served(server, store_home, monkeypatch):
    monkeypatch.setenv("ZOO_HOME", str(store_home))  # the commands read the same store
    return server


@pytest.fixture
def page(browser):
    opened = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    opened.close()
    assert not errors, errors  # no script failed on any page


def test_a_filter_narrows_the_runs_and_a_run_page_opens(served, page):
    page.goto(served.url + "/runs")
    assert page.locator("#runs-table tbody tr").count() == 5
    page.fill("#where", "model == 'lstm-char' and seed == 1")
    page.click("#filter button")
    page.wait_for_url("**/runs?where=*")
    rows = page.locator("#runs-table tbody tr")
    assert rows.count() == 1 and "r-b-1" in rows.inner_text()
    assert page.inner_text("#count").startswith("1 of 5 runs")
    page.click("text=r-b-1")
    page.wait_for_url("**/runs/r-b-1")
    assert page.inner_text("h1 .run-id") == "r-b-1"
    assert "zoo reproduce r-b-1" in page.inner_text("table.commands")
    answer = page.goto(served.url + "/runs/no-such-run")
    assert answer.status == 404 and "no-such-run" in page.inner_text("#error")


def test_the_comparison_draws_its_bars(served, page):
    page.goto(served.url + "/compare?baseline=decoder-char")  # its cells: test_ui.py
    shown = [line.split("\t") for line in page.inner_text("#compare-table").splitlines()]
    assert shown[2][0] == "lstm-char" and shown[2][2].startswith("+0.500 [")
    page.wait_for_selector(".chart[data-figure] .main-svg")
    assert page.locator(".chart g.point").count() == 2  # one bar per row
    assert page.locator(".chart g.errorbar").count() == 2


def test_curves_draw_follow_the_controls_and_are_read_again_while_a_run_trains(served, page):
    from zoo.records.paths import run_folder

    page.goto(served.url + "/runs")
    page.check("input[value='r-a-0']")
    page.check("input[value='r-live']")
    page.click("#draw")
    page.wait_for_selector("#curves-chart .main-svg")
    assert page.get_attribute("#curves-chart", "data-traces") == "4"  # train and validation
    assert page.locator("#curves-chart .scatterlayer .trace").count() == 4
    assert "read again" in page.inner_text("#refresh-note")
    page.check("#log-axis")
    page.wait_for_function("document.getElementById('curves-chart').layout.yaxis.type === 'log'")
    page.select_option("#metric", "lr")
    page.wait_for_function(
        "document.getElementById('curves-chart').layout.title.text === 'lr by step'"
    )
    with open(run_folder("r-live") / "metrics.jsonl", "a") as curve:
        curve.write(json.dumps({"step": 21, "lr": 5e-4, "elapsed": 2.1}) + "\n")
    page.wait_for_function(
        "document.getElementById('curves-chart').data.some(t => t.x.includes(21))",
        timeout=10_000,
    )


def test_the_report_opens_offline_and_asks_for_nothing(served, browser, tmp_path):
    assert run_cli("report", "-o", str(tmp_path / "report.html")).code == 0
    context = browser.new_context(offline=True)
    asked = []
    context.on("request", lambda request: asked.append(request.url))
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto((tmp_path / "report.html").as_uri())
    page.wait_for_selector("#curves-chart .main-svg")
    page.wait_for_selector("#compare .chart .main-svg")
    assert page.locator("#runs-table tbody tr").count() == 5
    assert page.locator("section.run-page").count() == 5
    page.click("#runs-table >> text=r-a-1")
    assert page.evaluate("location.hash") == "#run-r-a-1"
    context.close()
    assert not errors, errors
    assert asked == [(tmp_path / "report.html").as_uri()]  # the file itself, nothing else

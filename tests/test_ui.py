"""zoo ui over HTTP and zoo report: each view shows what `zoo runs`, `zoo compare` and
`zoo show` print for the same store (read from the JSON each page is built from), the
server only reads, and a URL reaches nothing but the store's runs and a few named files.
The store is written in-process with a few rows, curves and samples; the pages are read
from a real server on a free port. Browser tests are in test_ui_browser.py."""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import urllib.error
import urllib.request

import pytest
from conftest import run_cli

from zoo.records.store import Store

pytest.importorskip("starlette", reason="zoo ui needs the ui extra: pip install 'zoo[ui]'")


def add_run(run_id, model, seed, value, *, lr=1e-3, status="finished", steps=20, created=None):
    """A run row as training leaves it, with its metrics.jsonl and samples.txt."""
    from zoo.records.paths import run_folder

    config = {
        "configs": {"model": {"n_layer": 2}, "train": {"steps": steps, "lr": lr}},
        "git_commit": "0123abcd",
        "timing": {"phases": {"data": 0.5, "train": 2.0, "evaluate": 0.5}, "measured": 3.0},
    }
    with Store() as store:
        store.insert(
            run_id,
            model=model,
            architecture=model.split("-")[0],
            tokenizer="char",
            dataset="text",
            task="language-modeling",
            seed=seed,
            params=1000,
            status=status,
            config_hash=f"{model}-{lr}",
            config=config,
            metrics={"val_bpc": value, "train_loss": value + 0.1, "steps": steps},
            duration=3.0,
            created=created,
        )
    folder = run_folder(run_id)
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        {"step": s, "train_loss": 3.0 - 0.05 * s + 0.01 * seed, "lr": lr, "elapsed": 0.1 * s}
        for s in range(1, steps + 1)
    ]
    lines += [{"step": steps, "val_loss": value, "val_bpc": value}]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    (folder / "samples.txt").write_text("ROMEO: <b>a sample</b>\n")
    return run_id


@pytest.fixture
def store(isolated):
    runs = []
    for seed in range(3):
        runs.append(
            add_run(f"r-a-{seed}", "decoder-char", seed, 2.0 + 0.1 * seed, created=1e9 + seed)
        )
        runs.append(
            add_run(f"r-b-{seed}", "lstm-char", seed, 2.5 + 0.1 * seed, lr=3e-3, created=2e9 + seed)
        )
    return runs


@pytest.fixture
def server(store):
    from zoo.home import zoo_home
    from zoo.web.app import Server

    running = Server(zoo_home()).start()
    try:
        yield running
    finally:
        running.stop()


def get(server, path, method="GET"):
    request = urllib.request.Request(server.url + path, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def embedded(page: str, name: str):
    """The JSON a page embeds in <script type="application/json" id=NAME>."""
    found = re.search(rf'<script type="application/json" id="{name}">(.*?)</script>', page, re.S)
    assert found, f"no {name} in the page"
    return json.loads(found.group(1))


def table_cells(page: str, table_id: str) -> list[list[str]]:
    """The text of each cell of an HTML table, row by row (the header row first)."""
    table = re.search(rf'<table[^>]*id="{table_id}"[^>]*>(.*?)</table>', page, re.S).group(1)
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
    cells = [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S) for row in rows]
    return [[html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in row] for row in cells]


def query(**params):
    from urllib.parse import urlencode

    return "?" + urlencode(params)


def test_the_run_list_is_what_zoo_runs_prints(server):
    where, sort = "lr > 2e-3 or seed == 0", "-value"
    status, page = get(server, "/runs" + query(where=where, sort=sort, columns="lr,train.steps"))
    assert status == 200
    shown = embedded(page, "runs-data")
    cli = run_cli(
        "runs", "--where", where, f"--sort={sort}", "--columns", "lr,train.steps", "--json"
    )
    assert shown["rows"] == json.loads(cli.out)
    assert [r["id"] for r in shown["rows"]] == ["r-b-2", "r-b-1", "r-b-0", "r-a-0"]
    assert shown["selected"] == 4 and shown["total"] == 6
    assert "4 of 6 runs" in page


def test_the_first_page_paged_by_the_store_is_what_zoo_runs_prints(server):
    from zoo.comparison.runs import SUMMARY

    page = get(server, "/runs")[1]
    shown = embedded(page, "runs-data")  # no condition: the store pages it
    extra = [c for c in shown["shown"] if c not in SUMMARY]
    assert {"val_bpc", "lr", "seed"} <= set(shown["shown"])  # what differs between the runs
    cli = run_cli("runs", "--sort=-created", "--columns", ",".join(extra), "--json")
    assert shown["rows"] == json.loads(cli.out)
    assert shown["selected"] == shown["total"] == 6
    from zoo.web.app import cell_text

    header, *body = table_cells(page, "runs-table")  # what the table shows is that data
    assert [h.rstrip(" ▲▼") for h in header[1:]] == shown["shown"]
    assert [row[1:] for row in body] == [
        [cell_text(r.get(c)) for c in shown["shown"]] for r in shown["rows"]
    ]


def test_a_condition_zoo_runs_refuses_is_the_pages_one_line(server):
    bad = "model.to_csv('x') == 1"
    status, page = get(server, "/runs" + query(where=bad))
    cli = run_cli("runs", "--where", bad)
    assert status == 200 and cli.code == 2
    # the same message; the CLI names the option as its flag (--where), the page as its box
    assert cli.err.removeprefix("zoo: error: --").strip() in html.unescape(page)
    assert not os.path.exists("x")


def test_pages_of_runs(server):
    from zoo.web import views

    for n in range(60):
        add_run(f"x-{n:02d}", "decoder-char", 10 + n, 3.0, created=3e9 + n)
    first = embedded(get(server, "/runs")[1], "runs-data")
    second = embedded(get(server, "/runs?page=2")[1], "runs-data")
    assert (first["pages"], len(first["rows"])) == (2, views.PER_PAGE)
    assert first["rows"][0]["id"] == "x-59"  # newest first, and a run written meanwhile shows
    assert {r["id"] for r in first["rows"]}.isdisjoint(r["id"] for r in second["rows"])
    assert len(first["rows"]) + len(second["rows"]) == 66


def test_the_comparison_is_what_zoo_compare_prints(server):
    status, page = get(server, "/compare" + query(baseline="decoder-char"))
    assert status == 200
    cli = run_cli("compare", "--baseline", "decoder-char", "--format", "json")
    assert embedded(page, "compare-data") == json.loads(cli.out)
    markdown = run_cli("compare", "--baseline", "decoder-char", "--format", "markdown").out
    legend = [line.strip() for line in markdown.split("\n\n", 1)[1].splitlines() if line.strip()]
    shown = re.search(r'<ul class="legend" id="legend">(.*?)</ul>', page, re.S).group(1)
    assert re.findall("<li>(.*?)</li>", html.unescape(shown)) == legend  # notes included
    lines = [line for line in markdown.splitlines() if line.startswith("| ")]
    printed = [[c.strip().strip("*") for c in line.strip("|").split(" | ")] for line in lines]
    shown = table_cells(page, "compare-table")
    assert shown == [printed[0]] + printed[2:]  # every cell as zoo compare prints it
    assert shown[1][1] == "2.100 ± 0.100 (n=3)" and shown[2][2].startswith("+0.500 [")
    figure = embedded(page, "bars-0")
    assert [t["y"] for t in figure["data"]] == [[pytest.approx(2.1)], [pytest.approx(2.6)]]
    assert [t["error_y"]["array"] for t in figure["data"]] == [[pytest.approx(0.1)]] * 2


def test_the_run_page_is_what_zoo_show_prints(server):
    from zoo.records.paths import MODEL_CARD, run_folder

    (run_folder("r-a-1") / MODEL_CARD).write_text("# zoo-decoder-char <i>card</i>\n")
    status, page = get(server, "/runs/r-a-1")
    assert status == 200
    shown = json.loads(re.search(r'class="run-data">(.*?)</script>', page, re.S).group(1))
    assert shown == json.loads(run_cli("show", "r-a-1", "--json").out)
    config_file = run_cli("show", "r-a-1", "--config").out
    assert html.escape(config_file, quote=False).strip() in html.unescape(page) or (
        html.escape(config_file).strip() in page
    )
    for part in (
        "zoo reproduce r-a-1",
        "0123abcd",
        "&lt;b&gt;a sample&lt;/b&gt;",
        "evaluate",
        "# zoo-decoder-char &lt;i&gt;card&lt;/i&gt;",  # the card zoo export kept
    ):
        assert part in page  # the samples and the card are text, never markup


def test_a_run_never_exported_shows_the_card_zoo_export_would_write(server):
    from zoo.operations.card import model_card, recorded_run

    add_run("r-c-0", "decoder-char", 0, 2.0, status="failed", created=3e9)
    status, page = get(server, "/runs/r-a-2")
    assert status == 200
    with Store() as store:
        card = model_card(recorded_run(store.get("r-a-2")))
    shown = re.search(r'<pre class="card">(.*?)</pre>', page, re.S).group(1)
    assert html.unescape(shown) == card  # the card, as text
    assert "made from its record" in page
    for part in (
        "# zoo-decoder-char-text-r-a-2",
        "trained by zoo as run `r-a-2`",
        "| val_bpc | 2.2000 | bits per character | lower |",
        "`zoo export r-a-2 FOLDER` writes it",
        "tags:\n- zoo\n- language-modeling\n- decoder\n- tokenizer-char\n",
    ):
        assert part in card
    assert "Checked on export" not in card and "How to use it" not in card
    assert "Model card" not in get(server, "/runs/r-c-0")[1]  # a failed run has none


@pytest.mark.parametrize(
    "path",
    [
        "/runs/nope",
        "/runs/..%2F..%2Fetc%2Fpasswd",
        "/static/..%2Fzoo.db",
        "/zoo.db",
        "/runs/r-a-1/x",
    ],
)
def test_a_url_outside_the_store_is_a_404_page(server, path):
    status, page = get(server, path)
    assert status == 404 and "<html" in page
    assert "SQLite" not in page and "root:" not in page


def test_the_server_only_reads(server):
    from zoo.home import zoo_home

    def state():
        return {
            str(p): (
                p.stat().st_size,
                p.stat().st_mtime_ns,
                hashlib.sha256(p.read_bytes()).hexdigest(),
            )
            for p in sorted(zoo_home().rglob("*"))
            # SQLite's own shared-memory index, and the empty log a reader may open beside it
            if p.is_file()
            and not p.name.endswith("-shm")
            and not (p.name.endswith("-wal") and p.stat().st_size == 0)
        }

    before = state()
    for path in (
        "/runs",
        "/runs/r-a-0",
        "/compare",
        "/curves?run=r-a-0&run=r-b-0",
        "/tune",
        "/api/curves?run=r-a-0",
    ):
        assert get(server, path)[0] == 200, path
    assert get(server, "/runs", method="POST")[0] == 405
    assert state() == before


def test_curves_are_the_runs_metrics_jsonl(server):
    status, data = get(server, "/api/curves?run=r-a-0&run=r-b-1&metric=loss")
    curves = json.loads(data)
    assert [(s["run"], s["key"]) for s in curves["series"]] == [
        ("r-a-0", "train_loss"),
        ("r-a-0", "val_loss"),
        ("r-b-1", "train_loss"),
        ("r-b-1", "val_loss"),
    ]
    assert curves["series"][2]["y"][0] == pytest.approx(3.0 - 0.05 + 0.01)
    assert not curves["training"] and "lr" in curves["metrics"]


def test_the_report_holds_every_view_and_asks_for_nothing(store):
    result = run_cli("report", "-o", "report.html", "--where", "model == 'decoder-char'")
    assert result.code == 0, result.err
    page = open("report.html", encoding="utf-8").read()
    assert [r["id"] for r in embedded(page, "runs-data")["rows"]] == ["r-a-2", "r-a-1", "r-a-0"]
    cli = run_cli("compare", "--where", "model == 'decoder-char'", "--format", "json")
    assert embedded(page, "compare-data") == json.loads(cli.out)
    assert all(f'id="run-r-a-{seed}"' in page for seed in range(3)) and "r-b-0" not in page
    assert "`zoo export r-a-1 FOLDER` writes it" in page  # each run's card, from its record
    assert "Plotly" in page and len(page) > 1_000_000  # plotly.js inside
    assert not re.search(r'<(script|link|img)[^>]+(src|href)="', page)  # nothing to fetch


def test_without_the_extra_ui_says_which_extra_to_install(isolated, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "uvicorn" else find_spec(name, *a),
    )
    result = run_cli("ui")
    assert result.code == 2
    assert result.err.strip().splitlines() == [
        "zoo: error: zoo ui needs uvicorn, of zoo's optional extra 'ui': pip install 'zoo[ui]'"
    ]


def test_other_commands_do_not_import_the_ui():
    from conftest import run_python

    lines = run_python(
        "import sys\nfrom zoo.cli.main import run_command\nrun_command(['list', 'models'])\n"
        "print('ui modules:', sorted(m for m in sys.modules if m.startswith(('zoo.web', 'starlette', 'uvicorn'))))"
    )
    assert lines[-1] == "ui modules: []"


def add_ensemble(run_id, members: dict[str, float]):
    """An ensemble row as zoo ensemble records it: the runs it combines, with weights."""
    combines = [
        {"run_id": m, "model": m[:3], "weight": w, "config_hash": m, "seed": 0}
        for m, w in members.items()
    ]
    with Store() as store:
        store.insert(
            run_id,
            kind="ensemble",
            model="ensemble-2",
            architecture="ensemble",
            dataset="text",
            task="language-modeling",
            seed=0,
            status="finished",
            config={"combines": combines, "weighting": "fit", "model": "ensemble-2"},
            metrics={"val_bpc": 1.9},
        )


def test_the_tune_page_shows_zoo_tunes_table_and_an_ensembles_members(server, monkeypatch):
    import optuna

    from zoo.tuning import report
    from zoo.web import views

    result = report.StudyResult(
        *("decoder-char", "text", "study-1", "val_bpc", "test_bpc", {"COMPLETE": 3}, 12.5),
        best={"trial": 1, "value": 2.0, "params": {"lr": 0.002}, "run_id": "r-a-0"},
        best_test=2.05,
        settings={"lr": 0.002},
        **{"tuned": [2.0, 2.1], "preset": [2.2, 2.35], "tuned_seeds": [1, 2]},
        preset_seeds=[1, 2],
    )
    study = optuna.create_study(study_name="study-1")  # in memory: what the page lays out
    for number, value in enumerate((2.3, 2.0, 2.2)):
        study.add_trial(
            optuna.trial.create_trial(
                params={"lr": 1e-3 * (number + 1)},
                distributions={"lr": optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True)},
                value=value,
            )
        )
    report.keep_rows([study], [result], "3 trials")
    # Optuna's importance (fANOVA, seconds) and studies.db are the screenshots' and test_tune's
    monkeypatch.setattr(views, "param_importance", lambda study: ({"lr": 1.0}, None))
    monkeypatch.setattr(views, "studies", lambda view: [views.study(study)])
    add_ensemble("e-1", {"r-a-0": 0.25, "r-b-0": 0.75})
    status, page = get(server, "/tune")
    assert status == 200
    shown = re.search(r'<pre class="budget-table">(.*?)</pre>', page, re.S).group(1)
    assert html.unescape(shown) == report.table([result], "3 trials")  # as zoo tune prints it
    assert "3 trials, minimize; best: trial 1" in page
    members = re.search(r'<table class="ensembles">(.*?)</table>', page, re.S).group(1)
    text = re.sub(r"<[^>]+>", "", members)
    assert "r-a-0 r-a (0.2500)" in text and "r-b-0 r-b (0.7500)" in text and "fit weights" in text
    status, page = get(server, "/runs/e-1")
    shown = json.loads(re.search(r'class="run-data">(.*?)</script>', page, re.S).group(1))
    assert shown == json.loads(run_cli("show", "e-1", "--json").out)
    members = re.search(r'<table class="members">(.*?)</table>', page, re.S).group(1)
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td></tr>", members)
    assert [(re.sub("<[^>]+>", "", a), b, c) for a, b, c in rows] == [
        ("r-a-0", "r-a", "0.2500"),
        ("r-b-0", "r-b", "0.7500"),
    ]


def test_the_ui_never_imports_torch(store):
    from conftest import run_python

    lines = run_python(
        "import os, sys\n"
        "from zoo.web import views\nfrom zoo.web.app import create_app\n"
        "view = views.StoreView(os.environ['ZOO_HOME'])\ncreate_app(view.home)\n"
        "views.runs_page(view), views.runs_page(view, where='seed == 1'), views.comparison(view, {})\n"
        "views.run_page(view, 'r-a-0'), views.curves(view, ['r-a-0']), views.ensembles(view)\n"
        "print('torch' in sys.modules)"
    )
    assert lines[-1] == "False"


def test_what_the_server_keeps_is_bounded_and_dropped_when_the_store_changes(store, monkeypatch):
    from zoo.home import zoo_home
    from zoo.web import views

    monkeypatch.setattr(views, "MAX_KEPT", 3)
    view = views.StoreView(zoo_home())
    view.tables()
    newest = ["r-b-2", "r-b-1", "r-b-0", "r-a-2", "r-a-1"]
    for page, run_id in enumerate(newest, 1):
        assert views.runs_page(view, per_page=1, page=page)["rows"][0]["id"] == run_id
    assert len(view._memo) == 3 and "tables" in view._memo  # the oldest pages dropped
    add_run("r-new", "decoder-char", 9, 1.5, created=5e9)
    assert views.runs_page(view, per_page=1)["rows"][0]["id"] == "r-new"
    assert len(view._memo) == 1

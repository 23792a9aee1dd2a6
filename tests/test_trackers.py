"""Trackers (the register_loggers hook): --log-to tensorboard,mlflow sends a run's curves
and final metrics where TensorBoard's event reader and MlflowClient read back the steps and
figures of metrics.jsonl; the run says where each wrote, and keeps it; the settings reach
TensorBoard's HParams dashboard; a sweep's runs are grouped; a logger that raises is one
warning and never fails the run."""

import json
import time

import pytest
from conftest import TINY_DECODER, run_cli

from zoo.core import loading
from zoo.hookspecs import hookimpl
from zoo.records.store import Store, home


def curve_of(run_id: str) -> list[dict]:
    lines = (home() / run_id / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def train(tiny_text, *extra) -> dict:
    result = run_cli(
        "run",
        "decoder-char",
        tiny_text,
        "--steps",
        12,
        *TINY_DECODER,
        "--device",
        "cpu",
        "--json",
        "--quiet",
        *extra,
    )
    assert result.code == 0, result
    return json.loads(result.out) | {"err": result.err}


@pytest.mark.slow
def test_tensorboard_and_mlflow_hold_the_curves_and_final_metrics(tiny_text, monkeypatch):
    from mlflow import MlflowClient
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("ZOO_TRACKER_TIMEOUT", "600")  # a loaded test machine's first sqlite
    run = train(tiny_text, "--log-to", "tensorboard,mlflow")
    curve = curve_of(run["run_id"])
    steps = {name: [r["step"] for r in curve if name in r] for name in ("train_loss", "val_loss")}
    assert len(steps["val_loss"]) >= 2

    assert run["trackers"]["tensorboard"]["log_dir"] == str(
        (home() / "tensorboard" / run["run_id"]).resolve()
    )
    events = EventAccumulator(run["trackers"]["tensorboard"]["log_dir"])
    events.Reload()
    for name, expected in steps.items():
        assert [e.step for e in events.Scalars(name)] == expected
    assert [e.value for e in events.Scalars("val_loss")] == pytest.approx(
        [r["val_loss"] for r in curve if "val_loss" in r], rel=1e-6
    )
    assert events.Scalars("final/val_bpc")[-1].value == pytest.approx(
        run["metrics"]["val_bpc"], rel=1e-6
    )

    session = hparams_session(run["trackers"]["tensorboard"]["log_dir"])
    assert session["hparams"]["model.n_layer"] == 1 and session["hparams"]["seed"] == 0
    assert session["hparams"]["model"] == "decoder-char"
    assert "final/val_bpc" in session["metrics"]

    client = MlflowClient(tracking_uri=f"sqlite:///{home().resolve() / 'mlflow.db'}")
    (found,) = client.search_runs([client.get_experiment_by_name("zoo").experiment_id])
    assert found.data.tags["zoo.run_id"] == run["run_id"]
    assert run["trackers"]["mlflow"] == {
        "tracking_uri": f"sqlite:///{home().resolve() / 'mlflow.db'}",
        "experiment": "zoo",
        "run_id": found.info.run_id,
    }
    assert found.data.params["model.n_layer"] == "1" and found.data.params["train.lr"]
    history = client.get_metric_history(found.info.run_id, "val_loss")
    # the curve's steps, then the final figure (whole splits) at the last step: the run's
    # latest val_loss in MLflow is the one zoo reports
    assert [m.step for m in history] == steps["val_loss"] + [steps["val_loss"][-1]]
    assert history[-1].value == pytest.approx(run["metrics"]["val_loss"], rel=1e-9)
    assert found.data.metrics["val_bpc"] == pytest.approx(run["metrics"]["val_bpc"], rel=1e-9)
    artifacts = {a.path for a in client.list_artifacts(found.info.run_id)}
    assert {"metrics.jsonl", "config.json", "model.safetensors"} <= artifacts
    assert not [a for a in artifacts if a.startswith(".") or a.endswith((".lock", ".tmp"))]
    assert (home() / run["run_id"] / ".writer.lock").exists()  # there, and not sent
    assert found.info.status == "FINISHED"

    shown = run_cli("show", run["run_id"])
    assert shown.code == 0
    assert f"tensorboard: log_dir {run['trackers']['tensorboard']['log_dir']}" in shown.out
    assert f"run_id {found.info.run_id}" in shown.out


def hparams_session(log_dir: str) -> dict:
    """What TensorBoard's HParams dashboard reads from a run's folder: the settings of its
    session and the metric tags the experiment declares."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    events = EventAccumulator(log_dir)
    events.Reload()
    data = {
        tag: plugin_data_pb2.HParamsPluginData.FromString(content)
        for tag, content in events.PluginTagToContent("hparams").items()
    }
    start = data["_hparams_/session_start_info"].session_start_info
    experiment = data["_hparams_/experiment"].experiment
    hparams = {}
    for key, value in start.hparams.items():
        kind = value.WhichOneof("kind")
        hparams[key] = getattr(value, kind)
        if kind == "number_value" and float(hparams[key]).is_integer():
            hparams[key] = int(hparams[key])
    return {"hparams": hparams, "metrics": [m.name.tag for m in experiment.metric_infos]}


@pytest.mark.slow
def test_a_run_prints_where_each_tracker_wrote(tiny_text, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("ZOO_TRACKER_TIMEOUT", "600")  # a loaded machine's first sqlite
    result = run_cli(
        "run", "decoder-char", tiny_text, "--steps", 4, *TINY_DECODER, "--device", "cpu",
        "--quiet", "--log-to", "tensorboard,mlflow",
    )  # fmt: skip
    assert result.code == 0, result
    lines = result.out.splitlines()
    (board,) = [line for line in lines if line.startswith("tensorboard: log_dir ")]
    (mlflow,) = [line for line in lines if line.startswith("mlflow: tracking_uri sqlite:///")]
    assert str(home().resolve() / "tensorboard") in board and "run_id " in mlflow


@pytest.mark.slow
def test_a_sweep_groups_its_runs_in_each_tracker(tiny_text, monkeypatch):
    from mlflow import MlflowClient

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("ZOO_TRACKER_TIMEOUT", "600")  # a loaded machine's first sqlite
    result = run_cli(
        "sweep", "decoder-char", "--on", tiny_text, "--steps", 2, *TINY_DECODER,
        "--grid", "lr=1e-3,2e-3", "--log-to", "tensorboard,mlflow", "--json",
    )  # fmt: skip
    assert result.code == 0, result
    run_ids = {cell["run_id"] for cell in json.loads(result.out)["cells"]}
    (group,) = (home() / "tensorboard").iterdir()  # one folder for the sweep
    assert group.name.startswith("sweep-")
    assert {p.name for p in group.iterdir()} == run_ids
    client = MlflowClient(tracking_uri=f"sqlite:///{home().resolve() / 'mlflow.db'}")
    found = client.search_runs([client.get_experiment_by_name("zoo").experiment_id])
    children = [r for r in found if "zoo.run_id" in r.data.tags]
    (parent,) = [r for r in found if "zoo.run_id" not in r.data.tags]
    assert {r.data.tags["zoo.run_id"] for r in children} == run_ids
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parent.info.run_id}
    assert parent.info.run_name == group.name


class Broken:
    def start(self, run):
        pass

    def log(self, record):
        raise RuntimeError("the tracker's server is gone")

    def finish(self, metrics, folder, status):
        raise AssertionError("no more calls after a failure")


class Slow:
    calls: list = []

    def start(self, run):
        Slow.calls.append(("start", run["id"], run["settings"]["model.n_layer"]))

    def log(self, record):
        time.sleep(0.5)  # a slow tracker: the training loop does not wait for it
        Slow.calls.append(("log", record["step"]))

    def finish(self, metrics, folder, status):
        Slow.calls.append(("finish", status, sorted(p.name for p in folder.iterdir())))


class TrackerPlugin:
    @hookimpl
    def register_loggers(self, register):
        register("broken", Broken, description="test: raises")
        register("slow", Slow, description="test: half a second per record")


@pytest.fixture
def with_trackers():
    zoo = loading.build_zoo(entry_points=False)
    assert zoo.add_plugin(TrackerPlugin(), loading.PluginInfo("test-trackers", "test"))
    loading.reset_zoo(zoo)
    Slow.calls = []


@pytest.mark.slow
def test_a_failing_logger_warns_once_and_a_slow_one_never_slows_the_run(tiny_text, with_trackers):
    run = train(tiny_text, "--log-to", "broken,slow")
    assert run["status"] == "finished"
    warnings = [line for line in run["err"].splitlines() if "warning" in line]
    assert len(warnings) == 1 and "logger 'broken' from plugin 'test-trackers'" in warnings[0]
    assert "the tracker's server is gone" in warnings[0]
    with Store() as store:
        assert store.get(run["run_id"])["status"] == "finished"
    records = curve_of(run["run_id"])
    assert Slow.calls[0] == ("start", run["run_id"], 1)
    assert [c[1] for c in Slow.calls if c[0] == "log"] == [r["step"] for r in records]
    assert Slow.calls[-1][:2] == ("finish", "finished") and "metrics.jsonl" in Slow.calls[-1][2]
    # the loop did not wait half a second per record
    assert run["metrics"]["train_time"] < 0.5 * len(records)


@pytest.mark.slow
def test_trackers_are_chosen_by_environment_and_unknown_ones_refused(
    tiny_text, with_trackers, monkeypatch
):
    monkeypatch.setenv("ZOO_LOG_TO", "slow")
    train(tiny_text)
    assert Slow.calls and Slow.calls[0][0] == "start"
    result = run_cli("run", "decoder-char", tiny_text, "--log-to", "tensorbord")
    assert result.code == 2 and "Did you mean: tensorboard" in result.err
    with Store() as store:
        assert len(store.rows()) == 1  # the refused run recorded nothing


@pytest.mark.slow
def test_a_sweep_sends_every_cell_to_its_trackers(tiny_text, with_trackers, monkeypatch):
    import os

    monkeypatch.delenv("ZOO_LOG_TO", raising=False)
    result = run_cli(
        "sweep",
        "decoder-char",
        "--on",
        tiny_text,
        "--steps",
        2,
        *TINY_DECODER,
        "--grid",
        "lr=1e-3,2e-3",
        "--log-to",
        "slow",
        "--json",
    )
    assert result.code == 0, result
    starts = [c for c in Slow.calls if c[0] == "start"]
    assert len(starts) == 2 and "ZOO_LOG_TO" not in os.environ


def test_a_tracker_whose_module_needs_a_missing_package_stops_the_run_before_it_trains(
    tmp_path, monkeypatch
):
    from zoo.errors import ZooError
    from zoo.train.tracking import Trackers

    (tmp_path / "needy_tracker.py").write_text("import zoo_absent_extra_xyz\nclass Logger: ...\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    class Needy:
        @hookimpl
        def register_loggers(self, register):
            register("needy", "needy_tracker:Logger", description="test: needs a package")

    zoo = loading.build_zoo(entry_points=False)
    assert zoo.add_plugin(Needy(), loading.PluginInfo("test-needy", "test"))
    with pytest.raises(ZooError, match="needs zoo_absent_extra_xyz, which is not installed") as e:
        Trackers(["needy"], zoo)
    assert "from plugin 'test-needy'" in str(e.value) and "\n" not in str(e.value)


# -- trackers beside training, never in front of it ----------------------------------
class Stuck:
    """A tracker that never answers one of its calls (``Stuck.method``)."""

    method = "start"
    release = None  # a threading.Event the test sets at its end
    calls: list = []

    def start(self, run):
        self._maybe_hang("start")
        return {"where": "nowhere"}

    def log(self, record):
        self._maybe_hang("log")

    def finish(self, metrics, folder, status):
        self._maybe_hang("finish")

    def _maybe_hang(self, method):
        Stuck.calls.append(method)
        if method == Stuck.method:
            Stuck.release.wait(120)


class WaitsForTheRow:
    """start() answers only once the run's row says 'finished' (or after 30 s)."""

    def start(self, run):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with Store() as store:
                status = store.get(run["id"])["status"]
            if status == "finished":
                return {"row": status}
            time.sleep(0.1)
        return {"row": "never finished while start() waited"}

    def log(self, record):
        pass

    def finish(self, metrics, folder, status):
        pass


class BlockingPlugin:
    @hookimpl
    def register_loggers(self, register):
        register("stuck", Stuck, description="test: never answers one call")
        register("waits", WaitsForTheRow, description="test: waits for the run's row")


@pytest.fixture
def blocking_trackers(monkeypatch):
    import threading

    zoo = loading.build_zoo(entry_points=False)
    assert zoo.add_plugin(BlockingPlugin(), loading.PluginInfo("test-blocking", "test"))
    loading.reset_zoo(zoo)
    Stuck.release, Stuck.calls = threading.Event(), []
    monkeypatch.setenv("ZOO_TRACKER_TIMEOUT", "1")
    yield
    Stuck.release.set()


@pytest.mark.slow
@pytest.mark.parametrize("method", ["start", "log", "finish"])
def test_a_tracker_that_never_answers_is_dropped_after_its_timeout(
    tiny_text, blocking_trackers, method
):
    Stuck.method = method
    began = time.monotonic()
    run = train(tiny_text, "--log-to", "stuck")
    seconds = time.monotonic() - began
    assert run["status"] == "finished"
    with Store() as store:
        assert store.get(run["run_id"])["status"] == "finished"
    warnings = [line for line in run["err"].splitlines() if "warning" in line]
    assert len(warnings) == 1, run["err"]
    assert (
        f"logger 'stuck' from plugin 'test-blocking' did not answer {method}() within 1 s"
        in (warnings[0])
    )
    if method != "start":
        assert Stuck.calls[0] == "start"
    assert Stuck.calls.count(method) == 1  # dropped: no call after the one that hung
    assert seconds < run["metrics"]["train_time"] + 30, seconds  # not the 600 s of old


@pytest.mark.slow
def test_the_row_is_finished_before_a_slow_start_answers(tiny_text, blocking_trackers, monkeypatch):
    """start() waits for the run's row to say 'finished': it can only when the row does not
    wait for it; what start() returned is still kept with the run."""
    monkeypatch.setenv("ZOO_TRACKER_TIMEOUT", "60")  # longer than the run takes
    run = train(tiny_text, "--log-to", "waits")
    assert run["trackers"] == {"waits": {"row": "finished"}}, run["err"]
    with Store() as store:
        assert store.get(run["run_id"])["config"]["trackers"] == {"waits": {"row": "finished"}}
    assert "warning" not in run["err"]


def test_the_tracker_timeout_setting_is_checked(monkeypatch):
    from zoo.errors import ZooError
    from zoo.train.tracking import TIMEOUT, call_timeout

    assert call_timeout() == TIMEOUT
    monkeypatch.setenv("ZOO_TRACKER_TIMEOUT", "2.5")
    assert call_timeout() == 2.5
    for bad in ("nan", "-1", "0", "soon", "1e9"):
        monkeypatch.setenv("ZOO_TRACKER_TIMEOUT", bad)
        with pytest.raises(ZooError, match="ZOO_TRACKER_TIMEOUT must be seconds"):
            call_timeout()

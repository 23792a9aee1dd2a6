"""MLflow: one MLflow run per zoo run, in the experiment named by ZOO_MLFLOW_EXPERIMENT
(default "zoo"), at MLFLOW_TRACKING_URI or else a SQLite store in ZOO_HOME (the folder
of the run folders)
(``mlflow ui --backend-store-uri sqlite:///$ZOO_HOME/mlflow.db`` shows it). Params are the
run's settings, metrics carry their steps, and the run folder's files become its artifacts
(not its lock and temporary files). A sweep's or a search's runs are children of one parent
run named after it, as MLflow shows nested runs."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

from mlflow import MlflowClient
from mlflow.entities import Metric, Param

MAX_PARAM = 6000  # MLflow's limit on a param value's length


def tracking_uri(home: Path) -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{home.resolve() / 'mlflow.db'}"


class MlflowLogger:
    def __init__(self):
        import logging

        for name in ("mlflow", "alembic"):  # its schema migrations talk at INFO on stderr
            logging.getLogger(name).setLevel(logging.WARNING)
        self.client: MlflowClient | None = None
        self.run_id: str | None = None
        self.step = 0

    def _started(self) -> tuple[MlflowClient, str]:
        """The client and MLflow run that ``start`` opened."""
        if self.client is None or self.run_id is None:
            raise RuntimeError("the MLflow tracker logs only after start()")
        return self.client, self.run_id

    def start(self, run: dict) -> dict:
        home = Path(run["folder"]).parent
        client = self.client = MlflowClient(tracking_uri=tracking_uri(home))
        name = os.environ.get("ZOO_MLFLOW_EXPERIMENT", "zoo")
        experiment = client.get_experiment_by_name(name)
        if experiment is None:
            artifacts = None
            if not os.environ.get("MLFLOW_TRACKING_URI"):  # beside the store, not in the cwd
                artifacts = (home / "mlflow-artifacts").resolve().as_uri()
            experiment_id = client.create_experiment(name, artifact_location=artifacts)
        else:
            experiment_id = experiment.experiment_id
        tags = {
            "zoo.run_id": run["id"],
            "zoo.model": run["model"],
            "zoo.dataset": run["dataset"],
            "zoo.task": run["task"],
        }
        if run.get("group"):
            tags["zoo.group"] = run["group"]
            tags["mlflow.parentRunId"] = _parent(client, experiment_id, run["group"])
        run_id = self.run_id = client.create_run(
            experiment_id, run_name=run["id"], tags=tags
        ).info.run_id
        params = [
            Param(key, str(value)[:MAX_PARAM])
            for key, value in {**run["settings"], "seed": run["seed"]}.items()
        ]
        for start in range(0, len(params), 100):  # MLflow takes 100 params per batch
            client.log_batch(run_id, params=params[start : start + 100])
        return {"tracking_uri": client.tracking_uri, "experiment": name, "run_id": run_id}

    def log(self, record: dict) -> None:
        self.step = int(record.get("step", self.step))
        self._metrics({k: v for k, v in record.items() if k != "step"}, self.step)

    def finish(self, metrics: dict, folder: Path, status: str) -> None:
        client, run_id = self._started()
        self._metrics(metrics, self.step)  # the final figures at the last step
        for path in _artifacts(Path(folder)):
            where = path.parent.relative_to(folder).as_posix()
            client.log_artifact(run_id, str(path), None if where == "." else where)
        client.set_tag(run_id, "zoo.status", status)
        client.set_terminated(run_id, "FINISHED" if status == "finished" else "FAILED")

    def _metrics(self, values: dict, step: int) -> None:
        client, run_id = self._started()
        now = int(time.time() * 1000)
        batch = [
            Metric(key, float(value), now, step)
            for key, value in values.items()
            if isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
        ]
        for start in range(0, len(batch), 1000):  # MLflow takes 1000 metrics per batch
            client.log_batch(run_id, metrics=batch[start : start + 1000])


def _parent(client: MlflowClient, experiment_id: str, group: str) -> str:
    """The group's parent run, made by the first of its runs. Parallel workers may
    make one each at once: each then takes the oldest and removes its own spare."""
    query = f"tags.`zoo.parent` = '{group}'"
    found = client.search_runs([experiment_id], query, order_by=["start_time ASC"])
    if found:
        return found[0].info.run_id
    mine = client.create_run(experiment_id, run_name=group, tags={"zoo.parent": group}).info.run_id
    client.set_terminated(mine, "FINISHED")
    found = client.search_runs([experiment_id], query, order_by=["start_time ASC"])
    oldest = min(found, key=lambda r: (r.info.start_time, r.info.run_id)).info.run_id
    if oldest != mine:
        client.delete_run(mine)
    return oldest


def _artifacts(folder: Path):
    """The run folder's files, without what only a live run needs: the writer's lock,
    hidden files and the temporary files of atomic writes."""
    for path in sorted(folder.rglob("*")):
        parts = path.relative_to(folder).parts
        if not path.is_file() or any(part.startswith(".") for part in parts):
            continue
        if path.suffix in (".lock", ".tmp", ".part"):
            continue
        yield path

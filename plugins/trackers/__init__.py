"""Built-in experiment trackers, registered through the same hook as any plugin's:
TensorBoard event files, a folder per run (``pip install 'zoo[tensorboard]'``), and MLflow
runs (``pip install 'zoo[mlflow]'``). Each is imported only when ``--log-to`` names it."""

from zoo.plugin import hookimpl


@hookimpl
def register_loggers(register):
    register(
        "tensorboard",
        "zoo.plugins.trackers.tensorboard:TensorBoardLogger",
        description="event files, a folder per run: tensorboard --logdir $ZOO_HOME/tensorboard",
    )
    register(
        "mlflow",
        "zoo.plugins.trackers.mlflow:MlflowLogger",
        description="an MLflow run per zoo run: params, metrics with steps, the run "
        "folder as artifacts (MLFLOW_TRACKING_URI; default sqlite under ZOO_HOME)",
    )

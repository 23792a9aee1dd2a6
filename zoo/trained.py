"""Reloading a finished run: its model and tokenizer from the run folder, without pickle."""
from __future__ import annotations

from dataclasses import dataclass

from zoo.config import build_config
from zoo.errors import ZooError
from zoo.job import RunFolder
from zoo.registry import get_zoo
from zoo.safeload import load_tokenizer
from zoo.store import Store, home


@dataclass
class Trained:
    """A finished run, reloaded from its folder: weights from safetensors, no pickle."""

    run_id: str
    task: str
    row: dict
    config: dict
    tokenizer: object
    model: object  # zoo.model.Model
    block_size: int | None


def load_trained(run_id: str, zoo=None, device: str = "cpu", precision: str | None = None) -> Trained:
    """A finished run's model and tokenizer. It evaluates at the precision the run trained
    with (its `precision` setting) unless `precision` says otherwise."""
    from zoo.engine import as_model
    from zoo.model import TaskSpec

    zoo = zoo or get_zoo()
    with Store() as store:
        row = store.get(run_id)
    folder = RunFolder(home() / row["id"])
    if not folder.file("config.json").is_file():
        raise ZooError(f"run {row['id']} has no config.json in {folder.path}")
    config = folder.read_json("config.json")
    if "spec" not in config or not folder.file("model.safetensors").is_file():
        raise ZooError(f"run {row['id']} has no saved model (status: {row['status']})")
    architecture = zoo.architectures.get(config["architecture"])
    tokenizer_entry = zoo.tokenizers.get(config["tokenizer"])
    model_config = build_config(architecture.config_class(), config["configs"]["model"] or {})
    tokenizer = load_tokenizer(tokenizer_entry.load(), folder.file("tokenizer.json"))
    model = as_model(architecture.load()(model_config, TaskSpec(**config["spec"])), device)
    model.load_state_dict(folder.load_weights())
    if hasattr(model, "configure_engine"):
        trained_with = (config["configs"].get("train") or {}).get("precision", "auto")
        model.configure_engine(precision=precision or trained_with)
    return Trained(row["id"], config["task"], row, config, tokenizer, model,
                   getattr(model_config, "block_size", None))

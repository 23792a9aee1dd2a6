"""What a run records about where it came from: versions of zoo, Python, libraries and
plugins, the git commit of the source tree, and the identity a resume must match."""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path

from zoo.train.plan import Plan, config_hash, plugin_entries

# what a run's provenance shows, besides its seed and versions (zoo show, zoo ui)
SHOWN_KEYS = (
    "config_hash",
    "parent_config_hash",
    "dataset_id",
    "dataset_location",
    "dataset_fingerprint",
    "text_column",
    "label_column",
    "git_commit",
    "git_dirty",
    "device",
    "reproduces",
)


def versions(zoo, plan: Plan) -> dict:
    from zoo import __version__

    found = {"zoo": __version__, "python": platform.python_version()}
    for package in ("torch", "numpy", "datasets", "tokenizers", "transformers"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    for entry in plugin_entries(plan, zoo):
        info = zoo.plugins.get(entry.plugin)
        found[f"plugin:{entry.plugin}"] = info.identity if info else "unknown"
    return found


def plugin_provenance(zoo, plan: Plan) -> dict:
    """Each of a run's plugins: its distribution and version, or its source's hash."""
    return {
        entry.plugin: zoo.plugins[entry.plugin].provenance()
        for entry in plugin_entries(plan, zoo)
        if entry.plugin in zoo.plugins
    }


def _git(*args: str) -> str | None:
    """git's output in the folder zoo's code is in, or None (no git, or not a repository)."""
    try:
        out = subprocess.run(
            ["git", *args],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def _zoo_is_tracked() -> bool:
    """Whether zoo's own code is a file of the repository git finds around it: an installed
    zoo inside a user's project (its .venv, say) is not, and that project's commit says
    nothing of the code that trained."""
    return _git("ls-files", "--error-unmatch", Path(__file__).resolve().name) is not None


def git_commit() -> str | None:
    """The commit of zoo's source checkout, or None (installed from a wheel, no git)."""
    out = _git("rev-parse", "HEAD") if _zoo_is_tracked() else None
    return (out or "").strip() or None


def git_dirty() -> bool | None:
    """Whether zoo's source checkout has uncommitted changes to tracked files (None: not a
    checkout)."""
    out = _git("status", "--porcelain", "--untracked-files=no") if _zoo_is_tracked() else None
    return None if out is None else bool(out.strip())


def identity(plan: Plan, dataset, zoo) -> dict:
    """What must not change for a run to be resumed: config, dataset, zoo's version and which
    code each plugin is (the tokenizer file's checksum is added by each checkpoint).
    ``plugin_versions`` holds the plugins' version numbers, for runs recorded before code
    was identified by its source (``same_code``)."""
    found = versions(zoo, plan)
    return {
        "config_hash": config_hash(plan, zoo),
        "configs": plan.config_values(),
        "dataset_fingerprint": dataset.fingerprint,
        "versions": {k: v for k, v in found.items() if k == "zoo" or k.startswith("plugin:")},
        "plugin_versions": {
            f"plugin:{entry.plugin}": zoo.plugins[entry.plugin].version
            for entry in plugin_entries(plan, zoo)
            if entry.plugin in zoo.plugins
        },
    }


def same_code(recorded: str | None, now: str | None, version_now: str | None) -> bool:
    """Whether a plugin identity a run recorded names the code installed now. A recorded
    source hash must equal today's; a recorded version number, today's version: a run that
    zoo recorded before it identified built-in and editable code by its source holds only
    the version, and is judged by what it recorded."""
    if recorded == now:
        return True
    if not recorded or recorded.startswith("sha256:"):
        return False
    return recorded == version_now


def code_changes(then: dict[str, str], now: dict[str, str]) -> str:
    """The plugins whose code differs between the identities a run recorded and today's
    (plugin name -> identity), those with the same change together:
    "char, decoder (sha256:ab then, sha256:cd now)"."""
    changed: dict[tuple[str, str], list[str]] = {}
    for name in sorted(set(then) | set(now)):
        if then.get(name) != now.get(name):
            pair = (then.get(name) or "absent", now.get(name) or "absent")
            changed.setdefault(pair, []).append(name)
    return "; ".join(f"{', '.join(names)} ({a} then, {b} now)" for (a, b), names in changed.items())


def machine_record(precision: str, device: str) -> dict:
    """What a run records of the machine it trained on: the CPU's name and the instruction
    sets that change its figures, the kernels torch runs (its CPU capability), the device,
    and the precision ``precision`` resolves to there."""
    import torch

    from zoo.core.machine import cpu
    from zoo.train.precision import resolve_precision
    from zoo.train.torch_model import pick_device

    resolved = torch.device(pick_device(device))
    gpu = {"gpu": torch.cuda.get_device_name(resolved)} if resolved.type == "cuda" else {}
    return {
        "cpu": cpu()["model"],
        "cpu_flags": cpu()["flags"],
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "device": resolved.type,
        "precision": resolve_precision(precision, resolved),
        **gpu,
    }

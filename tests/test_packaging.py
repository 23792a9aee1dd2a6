"""The wheel is the product: built from the tracked files, it holds every tracked module and
the catalogue, installs (not editable) into a fresh virtual environment, and `zoo list`,
`zoo run` and `zoo tune` work from there."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from conftest import REPO, TINY_DECODER

PACKAGES = {"zoo": "zoo", "plugins": "zoo/plugins", "pipelines": "zoo/pipelines"}


def tracked_files() -> list[str]:
    """The files a fresh clone has (the working tree's copies of them)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: no list of tracked files to build from")
    return [name for name in out.split("\0") if name and os.path.lexists(REPO / name)]


def expected_in_wheel(tracked: list[str]) -> set[str]:
    """Every tracked module of zoo/, plugins/ and pipelines/ under its installed path."""
    expected = {"zoo/registry.toml"}
    for name in tracked:
        top, _, rest = name.partition("/")
        if top in PACKAGES and name.endswith(".py"):
            expected.add(f"{PACKAGES[top]}/{rest}")
    return expected


def build_wheel(tmp_path: Path, tracked: list[str]) -> Path:
    """The wheel of a clean copy of the tracked files (no stale build/ folder can leak in)."""
    source = tmp_path / "source"
    for name in tracked:
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target, follow_symlinks=False)
    pip = [sys.executable, "-m", "pip"]
    dist = tmp_path / "dist"
    build = [*pip, "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", dist, source]
    result = subprocess.run(build, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    return next(dist.glob("zoo-*.whl"))


def fresh_venv(tmp_path: Path) -> Path:
    """A new virtual environment without zoo. Its dependencies are this environment's
    (linked in through a .pth file, zoo's own install left out) so that nothing is
    downloaded; pip still checks that they satisfy the wheel's requirements."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    ours = Path(sysconfig.get_paths()["purelib"])
    deps = tmp_path / "deps"
    deps.mkdir()
    for entry in ours.iterdir():
        name = entry.name
        if name == "zoo" or name.startswith(("__editable__", "zoo-")) or name.endswith(".pth"):
            continue
        (deps / name).symlink_to(entry)
    purelib = subprocess.run(
        [
            venv / "bin" / "python",
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "dependencies.pth").write_text(f"{deps}\n")
    return venv


@pytest.mark.slow
def test_the_wheel_holds_every_tracked_module_installs_and_runs_list_run_and_tune(
    tmp_path, isolated, tiny_text, negated_reviews
):
    tracked = tracked_files()
    wheel = build_wheel(tmp_path, tracked)
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = expected_in_wheel(tracked) - names
    assert not missing, f"tracked modules missing from the wheel: {sorted(missing)}"
    top_level = {name.split("/")[0] for name in names if ".dist-info/" not in name}
    assert top_level == {"zoo"}  # plugins and pipelines only under zoo/

    venv = fresh_venv(tmp_path)
    python, zoo = venv / "bin" / "python", venv / "bin" / "zoo"
    # no PYTHONPATH (the tests put the checkout on it): pip would take the checkout's
    # zoo.egg-info for an installed zoo and install nothing
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": ""}  # ZOO_HOME: the test's
    install = [sys.executable, "-m", "pip", "--python", python, "install", "--quiet"]
    subprocess.run([*install, "--no-index", f"zoo[tune] @ {wheel.as_uri()}"], check=True, env=env)

    def run(*args):
        result = subprocess.run(
            list(map(str, args)), capture_output=True, text=True, env=env, cwd=isolated, timeout=300
        )
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout

    located = run(python, "-c", "import zoo, zoo.plugins; print(zoo.__file__)")
    assert Path(located.strip()).is_relative_to(venv)  # the wheel's zoo, not the checkout's

    listed = json.loads(run(zoo, "list", "models", "--json"))
    assert {"decoder-char", "fasttext-wordpunct"} <= {m["name"] for m in listed}

    run(zoo, "run", "decoder-char", tiny_text, "--steps", 3, "--device", "cpu", *TINY_DECODER)
    tuned = run(
        *(zoo, "tune", "fasttext-wordpunct", "--on", negated_reviews, "--trials", 2),
        *("--space", "lr=log(1e-3,1e-1)", "--seeds", 1, "--steps", 10, "--device", "cpu"),
        *("--set", "dim=8", "--set", "buckets=97", "--set", "batch_size=8"),
    )
    assert "[models.fasttext-wordpunct-tuned]" in tuned  # the best settings, as a preset
    runs = json.loads(run(zoo, "runs", "--json"))
    finished = [r["model"] for r in runs if r["status"] == "finished" and r["kind"] == "train"]
    assert finished.count("decoder-char") == 1 and finished.count("fasttext-wordpunct") >= 2

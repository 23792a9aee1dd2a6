"""The package builds as a wheel with namespaced plugins and the catalogue inside."""

import subprocess
import sys
import zipfile

import pytest
from conftest import REPO


@pytest.mark.slow
def test_wheel_holds_namespaced_packages_and_the_catalogue(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path / "dist"),
            str(REPO),
        ],
        check=True,
        capture_output=True,
    )
    wheel = next((tmp_path / "dist").glob("zoo-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names}
    assert {n for n in top_level if not n.endswith(".dist-info")} == {
        "zoo"
    }  # no top-level plugins/
    assert "zoo/registry.toml" in names
    assert "zoo/plugins/decoder/model.py" in names and "zoo/pipelines/language_modeling.py" in names

    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    probe = (
        "import zoo, zoo.plugins.decoder, zoo.pipelines.language_modeling;"
        "from zoo.core.registry_file import load_catalogue;"
        "print(zoo.__file__); print(sorted(load_catalogue([]).models))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    location, models = result.stdout.splitlines()
    assert location.startswith(str(site)) and "decoder-char" in models

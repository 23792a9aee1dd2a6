"""The wheel's packages, found by setuptools rather than listed by hand: zoo/ is the zoo
package, and the top-level plugins/ and pipelines/ folders install as zoo.plugins and
zoo.pipelines. Everything else (metadata, dependencies, package data) is in pyproject.toml."""

from setuptools import find_packages, setup

# installed name -> folder in this repository
PACKAGE_DIR = {"zoo": "zoo", "zoo.plugins": "plugins", "zoo.pipelines": "pipelines"}


def discovered() -> list[str]:
    """Each mapped folder and every package below it, under its installed name."""
    packages = []
    for name, folder in PACKAGE_DIR.items():
        packages.append(name)
        packages += [f"{name}.{sub}" for sub in find_packages(where=folder)]
    return packages


setup(packages=discovered(), package_dir=PACKAGE_DIR)

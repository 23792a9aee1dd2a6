"""Which code a plugin is. A released distribution is its version; zoo's built-ins, a
distribution installed in editable (development) mode and a local module are a hash of
their source files, so any edit to their code makes new sweep cells and refuses a resume.

Hashes are computed on first use (a run's config hash, its provenance), not when plugins
load: `zoo list` reads no source. The built-ins' hash is computed once per process."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import sys
from pathlib import Path

# The files of a package that make its behaviour: code, and catalogues of presets.
SOURCE_SUFFIXES = (".py", ".toml")


def files_hash(files: list[Path], base: Path) -> str:
    """sha256 (16 hex digits) of files' names relative to ``base`` and their bytes; "" when
    one cannot be read."""
    digest = hashlib.sha256()
    for file in sorted(files, key=lambda f: f.relative_to(base).as_posix()):
        try:
            digest.update(file.relative_to(base).as_posix().encode() + b"\0")
            digest.update(file.read_bytes())
        except OSError:
            return ""
    return digest.hexdigest()[:16]


def package_files(folder: Path, suffixes=SOURCE_SUFFIXES) -> list[Path]:
    return [f for f in folder.rglob("*") if f.suffix in suffixes and f.is_file()]


def module_source_hash(plugin) -> str:
    """A plugin object's source: a module's file, every .py file of a package, or the module
    that defines the object; "" when there is no file to read."""
    module = (
        plugin
        if isinstance(plugin, type(sys))
        else sys.modules.get(getattr(plugin, "__module__", None) or type(plugin).__module__)
    )
    path = getattr(module, "__file__", None)
    if not path:
        return ""
    path = Path(path)
    files = sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]
    return files_hash(files, path.parent)


@functools.cache
def builtin_source_hash(packages: tuple[str, ...]) -> str:
    """Every source file of zoo's packages (the core and the built-ins' packages: .py files
    and the catalogue): the built-ins run on zoo's core, so a change to any of it is new
    code."""
    files: dict[Path, Path] = {}
    for name in packages:
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations if spec else None) or []:
            folder = Path(location)
            for file in package_files(folder):
                # the built-ins' packages sit apart from zoo in a checkout; their files
                # are named as installed, so a wheel and its checkout hash alike
                installed = Path(*name.split(".")) / file.relative_to(folder)
                files.setdefault(installed, file)
    digest = hashlib.sha256()
    for installed in sorted(files, key=Path.as_posix):
        digest.update(installed.as_posix().encode() + b"\0")
        digest.update(files[installed].read_bytes())
    return digest.hexdigest()[:16]


def editable_project(dist) -> str | None:
    """The project folder of a distribution installed in editable mode (PEP 610's
    direct_url.json with ``dir_info.editable``), or None for any other install."""
    try:
        text = dist.read_text("direct_url.json") if dist is not None else None
        found = json.loads(text) if text else None
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict) or not isinstance(found.get("dir_info"), dict):
        return None
    if found["dir_info"].get("editable") is not True:
        return None
    url = found.get("url")
    return url if isinstance(url, str) else ""


def top_package_hash(module_name: str) -> str:
    """The source of the top-level package (or module) that ``module_name`` belongs to:
    an editable plugin's whole package, wherever its code under it changed."""
    top = module_name.split(".")[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return ""
    if spec is None:
        return ""
    if spec.submodule_search_locations:
        digest = hashlib.sha256()  # several folders: a namespace package
        for folder in map(Path, spec.submodule_search_locations):
            digest.update(files_hash(package_files(folder), folder).encode())
        return digest.hexdigest()[:16]
    if spec.origin and Path(spec.origin).is_file():
        path = Path(spec.origin)
        return files_hash([path], path.parent)
    return ""

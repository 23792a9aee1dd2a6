"""The tests test the checkout they belong to: zoo, its built-in plugins and its pipelines
are imported from this checkout's folders, not from wherever zoo was installed from."""

from __future__ import annotations

import importlib
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent


def test_zoo_its_plugins_and_pipelines_come_from_this_checkout():
    names = ["zoo", "zoo.plugins", "zoo.pipelines", "zoo.pipelines.language_modeling"]
    names += ["zoo.plugins.decoder.model", "zoo.core.loading"]
    places = {name: Path(importlib.import_module(name).__file__).resolve() for name in names}
    assert {n: p for n, p in places.items() if not p.is_relative_to(CHECKOUT)} == {}

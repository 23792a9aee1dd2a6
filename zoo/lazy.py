"""Names a package exports but imports on first use (PEP 562), so importing ``zoo`` or
``zoo.plugin`` (and ``zoo list``) never imports torch."""

from __future__ import annotations

import importlib


def lazy_names(namespace: dict, table: dict[str, str]):
    """The module-level ``__getattr__`` and ``__dir__`` of the module whose globals are
    ``namespace``: each name in ``table`` is imported from the module it maps to when first
    used, then kept in ``namespace``."""

    def __getattr__(name: str):
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(namespace.get("__all__", ())))

    return __getattr__, __dir__

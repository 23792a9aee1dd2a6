"""The core's module names do not read alike: no two names where one is the other plus a
short suffix, as `process` and `processes`."""

from __future__ import annotations

from pathlib import Path

import zoo

CORE = Path(zoo.__file__).parent
BUILT_INS = {"plugins", "pipelines"}  # installed under zoo/ in a wheel, not core modules


def core_modules() -> list[Path]:
    return [
        path for path in CORE.rglob("*.py") if not BUILT_INS & set(path.relative_to(CORE).parts[:1])
    ]


def test_no_two_core_module_names_differ_by_a_suffix():
    names = sorted({p.stem for p in core_modules()} - {"__init__"})
    alike = [
        (a, b) for a in names for b in names if a != b and b.startswith(a) and len(b) - len(a) <= 3
    ]
    assert alike == []

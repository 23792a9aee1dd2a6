"""The core's shape: small modules (about 400 lines at most) whose names do not read alike
(no two names where one is the other plus a short suffix, as `process` and `processes`)."""

from __future__ import annotations

from pathlib import Path

import zoo

CORE = Path(zoo.__file__).parent
MAX_LINES = 400  # "about 400": a module past this is two modules
HEADROOM = 20  # the largest module stays this far below the limit: the limit is not its size
BUILT_INS = {"plugins", "pipelines"}  # installed under zoo/ in a wheel, not core modules


def core_modules() -> list[Path]:
    return [
        path for path in CORE.rglob("*.py") if not BUILT_INS & set(path.relative_to(CORE).parts[:1])
    ]


def test_no_core_module_is_over_about_400_lines():
    sizes = {
        p.relative_to(CORE): len(p.read_text(encoding="utf-8").splitlines()) for p in core_modules()
    }
    assert len(sizes) > 40
    assert {str(p): n for p, n in sizes.items() if n > MAX_LINES} == {}


def test_the_limit_is_no_tailored_fit():
    """No module sits just under the limit: one that does is split before it needs to be,
    and the limit is never raised to the size of the largest module."""
    sizes = {
        str(p.relative_to(CORE)): len(p.read_text(encoding="utf-8").splitlines())
        for p in core_modules()
    }
    assert {p: n for p, n in sizes.items() if n > MAX_LINES - HEADROOM} == {}


def test_no_two_core_module_names_differ_by_a_suffix():
    names = sorted({p.stem for p in core_modules()} - {"__init__"})
    alike = [
        (a, b) for a in names for b in names if a != b and b.startswith(a) and len(b) - len(a) <= 3
    ]
    assert alike == []

"""zoo: a plugin-based model zoo for small sequence models.

The user's Python API, the same operations as the command line::

    import zoo

    run = zoo.run("decoder-char", "shakespeare", steps=200)
    zoo.load(run.id).generate("ROMEO:", tokens=100)
    zoo.compare(metric="val_bpc")
    zoo.ensemble([id1, id2, id3], weights="fit")

Plugin authors import from ``zoo.plugin``. Names are imported on first use, so ``import zoo``
(and ``zoo list``) stays light and never imports torch.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from zoo.errors import UnknownNameError, ZooDeprecationWarning, ZooError
from zoo.lazy import lazy_names as _lazy_names

__version__ = "0.1.0"

# name -> module that defines it, imported on first access (PEP 562)
_LAZY = {
    "run": "zoo.api",
    "load": "zoo.api",
    "sweep": "zoo.api",
    "runs": "zoo.api",
    "compare": "zoo.api",
    "ensemble": "zoo.api",
    "evaluate": "zoo.api",
    "resume": "zoo.api",
    "reproduce": "zoo.api",
    "Run": "zoo.results",
    "LoadedRun": "zoo.operations.reload",
    "Evaluation": "zoo.operations.evaluate",
    "SweepResult": "zoo.results",
    "Ensemble": "zoo.operations.ensemble",
    "tune": "zoo.api",
    "TuneResult": "zoo.results",
    "Reproduction": "zoo.results",
    "models": "zoo.api",
    "catalog": "zoo.api",
    "Listing": "zoo.results",
    "show": "zoo.api",
    "Shown": "zoo.results",
    "Comparison": "zoo.comparison.table",
    "ComparisonSpec": "zoo.comparison.table",
    "Workers": "zoo.sweeps.executors",
    "Export": "zoo.results",
    "plot": "zoo.api",
    "plot_comparison": "zoo.api",
    "rm": "zoo.api",
    "export": "zoo.api",
    "Removal": "zoo.results",
    "ui": "zoo.api",
    "report": "zoo.api",
}

if TYPE_CHECKING:  # what _LAZY imports on first use, spelled out for readers and type checkers
    from zoo.api import (
        catalog,
        compare,
        ensemble,
        evaluate,
        export,
        load,
        models,
        plot,
        plot_comparison,
        report,
        reproduce,
        resume,
        rm,
        run,
        runs,
        show,
        sweep,
        tune,
        ui,
    )
    from zoo.comparison.table import Comparison, ComparisonSpec
    from zoo.operations.ensemble import Ensemble
    from zoo.operations.evaluate import Evaluation
    from zoo.operations.reload import LoadedRun
    from zoo.results import (
        Export,
        Listing,
        Removal,
        Reproduction,
        Run,
        Shown,
        SweepResult,
        TuneResult,
    )
    from zoo.sweeps.executors import Workers

# Spelled out (not built from _LAZY) so the reference, read from the source, lists them.
__all__ = [
    "ZooError",
    "UnknownNameError",
    "run",
    "load",
    "sweep",
    "Workers",
    "runs",
    "compare",
    "Comparison",
    "ComparisonSpec",
    "ensemble",
    "evaluate",
    "resume",
    "reproduce",
    "tune",
    "Run",
    "LoadedRun",
    "Evaluation",
    "SweepResult",
    "Ensemble",
    "TuneResult",
    "Reproduction",
    "models",
    "catalog",
    "Listing",
    "show",
    "Shown",
    "plot",
    "plot_comparison",
    "rm",
    "Removal",
    "export",
    "Export",
    "ui",
    "report",
]


# the deprecated names of the API (comparison_table, ...) say so by default, not only in tests
warnings.filterwarnings("default", category=ZooDeprecationWarning)

_lazy_getattr, __dir__ = _lazy_names(globals(), _LAZY)
_EARLIER_NAMES = {"Catalog": "Listing"}  # renamed names, kept working for code written for them


# deprecated functions, out of __all__; each warns when called, naming its replacement
_deprecated_getattr, _ = _lazy_names(globals(), {"comparison_table": "zoo.api"})


def __getattr__(name: str):
    if name == "comparison_table":
        return _deprecated_getattr(name)
    return _lazy_getattr(_EARLIER_NAMES.get(name, name))

"""The Python API, beside the command line, for notebooks and scripts.

Each function takes the names and settings its command takes, and raises ``ZooError``
where the command exits with code 2 (an unknown name, a setting that cannot work), before
anything trains::

    import zoo

    run = zoo.run("decoder-char", "shakespeare", steps=200, n_layer=2)   # zoo run
    run.metrics["val_bpc"], run.folder
    model = zoo.load(run.id)                                            # a finished run
    model.generate("ROMEO:", tokens=100)                                # zoo generate
    model.evaluate("shakespeare", split="validation")                   # zoo eval
    zoo.load(other_id).predict(["what a film"])                         # zoo predict
    zoo.sweep(["decoder-char", "digits-char"], on=["digits"], seeds=2)  # zoo sweep
    zoo.runs(), zoo.compare(metric="val_bpc")                           # zoo runs, compare
    zoo.models(), zoo.show("decoder-char")                              # zoo list, show
    zoo.plot([run.id], "curves.png"), zoo.rm([run.id])                  # zoo plot, rm
    zoo.plot_comparison(zoo.compare(), "bars.png")                      # zoo compare --plot
    zoo.ensemble([id1, id2, id3], weights="fit")                        # zoo ensemble
    zoo.export(run.id, "exported")                                      # zoo export
    zoo.report(where="dataset == 'digits'")                             # zoo report: HTML
    zoo.tune(["encoder-bpe", "lstm-wordpunct"], on="rotten_tomatoes",   # zoo tune
             space="lr=log(1e-4,1e-2) dropout=float(0,0.5)", trials=12)

Config settings are keyword arguments, as ``--set`` takes them: ``n_layer=2``; a key with a
section is passed as ``**{"train.lr": 1e-3}``.
"""

from zoo.api.conformance import check_plugin
from zoo.api.inspecting import (
    catalog,
    compare,
    models,
    plot,
    plot_comparison,
    report,
    rm,
    runs,
    show,
    ui,
)
from zoo.api.inspecting import (
    comparison_table as comparison_table,  # deprecated: zoo.compare
)
from zoo.api.sharing import export
from zoo.api.training import ensemble, evaluate, load, reproduce, resume, run, sweep, tune

__all__ = [
    "run",
    "resume",
    "reproduce",
    "load",
    "evaluate",
    "sweep",
    "ensemble",
    "tune",
    "catalog",
    "models",
    "show",
    "runs",
    "compare",
    "plot",
    "plot_comparison",
    "rm",
    "export",
    "ui",
    "report",
    "check_plugin",
]

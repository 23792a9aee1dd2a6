"""zoo: a plugin-based model zoo for small transformer models."""
__version__ = "0.1.0"


def runs():
    """All recorded runs as a pandas DataFrame (one column per metric)."""
    from zoo.store import Store

    with Store() as store:
        return store.frame()


def compare(*, metric=None, where=None, by=None, columns=None, baseline=None, evals=False,
            status=("finished",), better=None, pool=False):
    """The comparison table as a pandas DataFrame, one row per cell.

    Columns: the row keys (default model) and column keys (default dataset), task, metric,
    better, mean, std, n, best, setting, configs, runs; with ``baseline`` also diff, ci_low,
    ci_high, df and significant. Options mean what `zoo compare`'s options mean.
    """
    from zoo.comparison import load_runs, summarize

    return summarize(load_runs(), metric=metric, where=where, by=by, columns=columns,
                     baseline=baseline, evals=evals, status=status, better=better,
                     pool=pool).cells

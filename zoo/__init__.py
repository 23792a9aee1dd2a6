"""zoo: a plugin-based model zoo for small transformer models."""
__version__ = "0.1.0"


def runs():
    """All recorded runs as a pandas DataFrame (one column per metric)."""
    from zoo.store import Store

    with Store() as store:
        return store.frame()

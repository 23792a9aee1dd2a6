"""Which plugin's code failed, for an error raised while zoo runs plugins' code together (a
pipeline training an architecture on a tokenizer's ids, a prediction, an evaluation): one
line naming the plugin and the function, the traceback behind ``--debug``.

The plugin is read off the traceback: the innermost frame that is either zoo's own code or
a plugin's decides (frames of libraries such as torch in between are skipped), so an
``IndexError`` raised in torch's embedding under a model's ``forward`` names the model's
plugin, while zoo's own exceptions (a diverged run, a refused config) pass through as they
are. Where zoo finds a plugin broke the contract it checks (a tokenizer's id outside its
vocabulary, a validation without the score it promised), it raises
``zoo.errors.ContractBroken`` naming the object at fault."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from zoo.core.containment import describe
from zoo.errors import ContractBroken, ZooError


def culprit(exc: BaseException, zoo) -> tuple[str, str] | None:
    """(plugin, function) whose code raised ``exc``, or None when zoo's own code did."""
    if isinstance(exc, ContractBroken) and exc.culprit is not None:
        kind = exc.culprit if isinstance(exc.culprit, type) else type(exc.culprit)
        plugin = zoo.plugin_of(kind.__module__)
        if plugin is not None:
            return plugin, kind.__qualname__
    frames = list(_frames(exc.__traceback__))
    for frame_module, function, where in reversed(frames):  # innermost first
        plugin = zoo.plugin_of(frame_module)
        if plugin is not None:
            return plugin, f"{function} ({where})"
        # zoo's own (the built-in plugins, also under zoo, were found as plugins above)
        own = frame_module == "zoo" or frame_module.startswith("zoo.")
        if own and not isinstance(exc, ContractBroken):
            return None  # zoo's own exception, or a bug of zoo's: not a plugin's
    return None


def _frames(tb: TracebackType | None):
    while tb is not None:
        code = tb.tb_frame.f_code
        module = tb.tb_frame.f_globals.get("__name__", "")
        yield module, code.co_qualname, f"{Path(code.co_filename).name}:{tb.tb_lineno}"
        tb = tb.tb_next


@contextmanager
def naming_plugins(stage: str, zoo=None):
    """Run a stage (``training``, ``evaluation``, ``prediction``) whose failures in plugin
    code become one ZooError naming the plugin and the function; zoo's own errors, and a
    KeyboardInterrupt, go on as they were. ``zoo``: the one whose plugins run (default:
    the process's)."""
    try:
        yield
    except ZooError:
        raise
    except Exception as exc:
        from zoo.core.loading import get_zoo

        blamed = culprit(exc, zoo or get_zoo())
        if blamed is None:
            raise
        plugin, function = blamed
        failed = (
            f"broke the contract: {exc}"
            if isinstance(exc, ContractBroken)
            else f"failed: {describe(exc)}"
        )
        raise PluginFailed(f"{stage}: {function} from plugin {plugin!r} {failed}", plugin) from exc


class PluginFailed(ZooError):
    """Plugin code failed while zoo ran it: the message names the plugin and the function
    (``plugin``: its name)."""

    def __init__(self, message: str, plugin: str):
        super().__init__(message)
        self.plugin = plugin

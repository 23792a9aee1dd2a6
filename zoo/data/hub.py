"""Reaching the Hugging Face Hub: whether it answers, a bounded wait when it does not, and
its errors (no network, no such repository) in one line."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import urllib.parse


def hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co")


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether a TCP connection to the Hub opens within ``timeout`` seconds."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return False
    url = urllib.parse.urlparse(hub_endpoint())
    try:
        socket.create_connection((url.hostname, url.port or 443), timeout=timeout).close()
    except (OSError, ValueError, TypeError):
        return False
    return True


@contextlib.contextmanager
def hub_access():
    """Around a Hub call: with no network, the libraries run offline (the cache only), so an
    unknown id fails at once instead of after 25 s of retries; and their log lines (retries,
    warnings) stay out of zoo's output, whose own error line says what went wrong.
    Yields whether the Hub could be reached."""
    import datasets.config
    import huggingface_hub.constants

    reachable = hub_reachable()
    saved = huggingface_hub.constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE
    loggers = [logging.getLogger(name) for name in ("huggingface_hub", "datasets", "fsspec")]
    levels = [logger.level for logger in loggers]
    if not reachable:
        huggingface_hub.constants.HF_HUB_OFFLINE = datasets.config.HF_HUB_OFFLINE = True
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield reachable
    finally:
        huggingface_hub.constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE = saved
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def explain_error(exc: Exception) -> str:
    """The root cause of a loading failure, in words (datasets wraps it in its own error)."""
    chain: list[BaseException] = [exc]
    while len(chain) < 20:
        cause = chain[-1].__cause__ or chain[-1].__context__
        if cause is None:
            break
        chain.append(cause)
    for error in chain:
        if isinstance(error, UnicodeDecodeError):
            return (
                f"the file is not UTF-8 text ({error.reason} at byte {error.start}); "
                "save it as UTF-8"
            )
        if "corresponds to no data" in str(error):
            return f"a split has no rows ({str(error).strip()}); every split needs at least one"
    if type(chain[-1]).__name__ == "SchemaInferenceError":
        return "the file has no rows"
    return short_error(chain[-1])  # type: ignore[arg-type]  # a cause is an Exception here


def short_error(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]

"""Checks of a registry.toml table (or a plugin's presets, written the same way) whose
errors name the file and, where it can be found, the line."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import NoReturn

from zoo.errors import ZooError


class FileParser:
    """Validation helpers that name the file (or the plugin whose presets they check) and,
    where it can be found, the line."""

    def __init__(self, path: Path | str, text: str):
        self.path, self.lines = path, text.splitlines()

    def line_of(self, needle: str) -> int | None:
        pattern = re.compile(rf"^\s*\[?[^#]*\b{re.escape(needle)}\b")
        for number, line in enumerate(self.lines, 1):
            if pattern.search(line):
                return number
        return None

    def fail(self, message: str, needle: str | None = None) -> NoReturn:
        line = self.line_of(needle) if needle else None
        where = f"{self.path}, line {line}" if line else str(self.path)
        raise ZooError(f"{where}: {message}")

    def expect(self, value, kind, what: str):
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            self.fail(
                f"{what} must be a {_type_word(kind)}, not {type(value).__name__}",
                what.split()[-1].strip("[]").split(".")[-1],
            )
        return value

    def resolve_path(self, base: Path, value, what: str) -> Path:
        """A path in the file, relative to it; one a filesystem cannot hold is an error."""
        text = self.expect(value, str, what)
        try:
            if "\x00" in text:
                raise ValueError("embedded null byte")
            return (base / text).resolve()
        except (ValueError, OSError) as exc:
            self.fail(f"{what} {text!r} is not a usable path ({exc})", what.split()[-1])

    def check_keys(self, table: dict, allowed: set[str], where: str) -> None:
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f" Did you mean: {close[0]}?" if close else ""
                self.fail(
                    f"unknown key {key!r} in {where}.{hint} Valid keys: "
                    f"{', '.join(sorted(allowed))}",
                    key,
                )


def _type_word(kind) -> str:
    return {list: "list", dict: "table", str: "string"}.get(kind, kind.__name__)

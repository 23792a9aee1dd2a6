"""Weights kept out of training by name (the ``freeze`` setting): a new head trained on a
frozen body first, as in linear probing before fine-tuning (Kumar et al., 2022), or a
masked-LM head warmed before the encoder under it moves."""

from __future__ import annotations

from fnmatch import fnmatchcase

from zoo.errors import UnknownNameError


def freeze_matching(module, patterns: list[str]) -> list[str]:
    """Turn off ``requires_grad`` for the module's weights whose names match any of the
    globs ``patterns``; returns their names. A tied weight goes by its first name, as
    ``state_dict`` saves it. A pattern that matches nothing is refused, naming the
    prefixes the weights' names have."""
    named = dict(module.named_parameters())
    for pattern in patterns:
        if not any(fnmatchcase(name, pattern) for name in named):
            prefixes = sorted({".".join(name.split(".")[:2]) for name in named})
            raise UnknownNameError(
                "weight pattern", pattern, named, hint=f"the weights' names begin {prefixes}"
            )
    frozen = [name for name in named if any(fnmatchcase(name, p) for p in patterns)]
    for name in frozen:
        named[name].requires_grad_(False)
    return frozen

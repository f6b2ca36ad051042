"""The rules configs check their values with, and the one-line error that names where a
faulty value came from (its file, or the command-line item that set it)."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable

from transduce.errors import UserError

# ---------------------------------------------------------------- checking values
Problem = tuple[str, str]  # (key, what is wrong with its value)


@dataclasses.dataclass(frozen=True)
class Origin:
    """Where a run's settings came from, so an error names the file or the command-line item
    that set the faulty value.

    Attributes:
        file: the YAML file, the run's config.yaml or checkpoint, or "defaults".
        given: the command line's ``key=value`` items.
    """

    file: str = "defaults"
    given: tuple[str, ...] = ()

    def keys(self) -> list[str]:
        """The key of each command-line item, as written (bare or dotted)."""
        return [item.partition("=")[0].strip() for item in self.given]

    def of(self, key: str) -> str:
        leaf = key.rsplit(".", 1)[-1]
        for item, name in reversed(list(zip(self.given, self.keys()))):
            if name.rsplit(".", 1)[-1] == leaf:
                return f"command line {item}"
        return self.file

    def __str__(self) -> str:
        return f"{self.file} and the command line" if self.given else self.file


def at_least(config: Any, low: float, *keys: str) -> list[Problem]:
    """A problem for each ``key`` of ``config`` below ``low`` (or not a number)."""
    return [
        (k, f"{k} must be at least {low}, not {getattr(config, k)}")
        for k in keys
        if not getattr(config, k) >= low
    ]


def in_range(
    config: Any, key: str, low: float, high: float, high_included: bool = False
) -> list[Problem]:
    """A problem unless ``low <= value < high`` (``<= high`` with ``high_included``)."""
    value = getattr(config, key)
    ok = low <= value <= high if high_included else low <= value < high
    if ok:
        return []
    top = f"at most {high}" if high_included else f"below {high}"
    return [(key, f"{key} must be at least {low} and {top}, not {value}")]


def one_of(config: Any, key: str, choices: Iterable[str]) -> list[Problem]:
    choices = tuple(choices)
    value = getattr(config, key)
    if value in choices:
        return []
    return [(key, f"{key} must be one of {', '.join(choices)}, not {value!r}")]


def raise_problems(problems: list[Problem], origin: Origin | str) -> None:
    """Raise a UserError for the first problem, naming where its value came from."""
    if problems:
        key, phrase = problems[0]
        origin = origin if isinstance(origin, Origin) else Origin(str(origin))
        raise UserError(f"{origin.of(key)}: {phrase}")

"""``key=value`` overrides for the frozen dataclasses that configure runs."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, TypeVar

from transduce.errors import UserError

C = TypeVar("C")
_TRUE, _FALSE = {"true", "yes", "1", "on"}, {"false", "no", "0", "off"}


def _parse(key: str, raw: str, current: Any, source: str) -> Any:
    kind = type(current)
    try:
        if kind is bool:
            if raw.lower() in _TRUE | _FALSE:
                return raw.lower() in _TRUE
            raise ValueError
        return kind(raw) if current is not None else raw
    except ValueError:
        raise UserError(f"{source}: {key}={raw!r} is not a valid {kind.__name__}") from None


def apply_overrides(config: C, overrides: Iterable[str], source: str = "command line") -> C:
    """Return ``config`` with ``key=value`` items applied, each value parsed as the type of the
    field's current value.

    Raises:
        UserError: for an item that is not key=value, an unknown key (the message lists the
            valid ones) or a value of the wrong type.
    """
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    changes = {}
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep:
            raise UserError(f"{source}: {item!r} is not key=value")
        if key not in fields:
            raise UserError(f"{source}: unknown config key {key!r}; valid keys: "
                            f"{', '.join(sorted(fields))}")
        changes[key] = _parse(key, raw.strip(), fields[key], source)
    return dataclasses.replace(config, **changes)

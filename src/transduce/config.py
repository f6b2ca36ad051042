"""``key=value`` overrides for the frozen dataclasses that configure runs."""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Iterable, TypeVar

import yaml

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


def _check_type(key: str, value: Any, current: Any, source: str) -> Any:
    if isinstance(current, bool) or isinstance(value, bool):
        if type(value) is not type(current):
            raise UserError(f"{source}: {key} must be true or false, not {value!r}")
        return value
    if isinstance(current, float) and isinstance(value, int):
        return float(value)
    if not isinstance(value, type(current)):
        raise UserError(f"{source}: {key} must be a {type(current).__name__}, not {value!r}")
    return value


def load_config(cls: type[C], path: str | os.PathLike | None,
                overrides: Iterable[str] = ()) -> C:
    """Build ``cls`` from a YAML mapping (if ``path``) and then ``key=value`` overrides.

    Raises:
        UserError: unreadable or invalid YAML (with its line), a key ``cls`` does not have
            (the message lists the valid ones), or a value of the wrong type.
    """
    config = cls()
    if path is not None:
        try:
            with open(path, encoding="utf-8") as f:
                data = yaml.safe_load(f) or {}
        except OSError as error:
            raise UserError(f"{path}: cannot read ({error.strerror})") from None
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            where = f":{mark.line + 1}" if mark else ""
            raise UserError(f"{path}{where}: not valid YAML ({getattr(error, 'problem', error)})"
                            ) from None
        if not isinstance(data, dict):
            raise UserError(f"{path}: expected a mapping of key: value lines")
        fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
        for key, value in data.items():
            if key not in fields:
                raise UserError(f"{path}: unknown config key {key!r}; valid keys: "
                                f"{', '.join(sorted(fields))}")
            data[key] = _check_type(key, value, fields[key], str(path))
        config = dataclasses.replace(config, **data)
    return apply_overrides(config, overrides)

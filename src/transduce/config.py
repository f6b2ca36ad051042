"""Run configs: frozen dataclasses, possibly nested, set from YAML and ``key=value`` items.

A config may hold other config dataclasses as sections (a run's ``model`` is the library's
:class:`~transduce.nn.TransformerConfig`, its ``engine`` the training engine's settings), so
each hyper-parameter is declared once. A key is either dotted (``model.d_model``) or bare
(``d_model``) when exactly one field has that name; a top-level field wins over a nested one.
A section may be a tagged union: one of several config classes, chosen by a tag
(``model: patch`` picks the patch model's config; see :func:`switch`), so that a setting of
another member is an error by construction. YAML files (read in
:mod:`transduce.config_files`) may use sections or bare keys alike.
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import Any, Iterable, TypeVar

from transduce.errors import UserError

C = TypeVar("C")
_TRUE, _FALSE = {"true", "yes", "1", "on"}, {"false", "no", "0", "off"}


def unions(config: Any) -> list[str]:
    """The names of ``config``'s tagged-union fields."""
    return [f.name for f in dataclasses.fields(config) if f.metadata.get("union")]


def union_of(config: Any, name: str) -> dict | None:
    """The registry (tag → class) of ``config``'s field ``name`` when that field is a
    tagged union (declared with ``metadata={"union": REGISTRY}``), else None."""
    field = next((f for f in dataclasses.fields(config) if f.name == name), None)
    return field.metadata.get("union") if field is not None else None


def flatten(config: Any, prefix: str = "") -> dict[str, Any]:
    """Every leaf field of ``config`` by its dotted path, sections expanded. A tagged union
    section gives its tag under its own name (``model``: "patch") and its member's fields
    under it (``model.patch_len``)."""
    leaves = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.metadata.get("union") is not None:
            leaves[f"{prefix}{f.name}"] = value.name
            leaves.update(
                (k, v)
                for k, v in flatten(value, f"{prefix}{f.name}.").items()
                if k != f"{prefix}{f.name}.name"
            )
        elif dataclasses.is_dataclass(value):
            leaves.update(flatten(value, f"{prefix}{f.name}."))
        else:
            leaves[f"{prefix}{f.name}"] = value
    return leaves


def switch(config: C, name: str, tag: str, source: str) -> C:
    """``config`` with its union field ``name`` set to the member ``tag``: that member's
    defaults, keeping the values of the settings it shares with the member it replaces."""
    registry, current = union_of(config, name), getattr(config, name)
    if tag not in registry:
        raise UserError(f"{source}: {name} must be one of {', '.join(registry)}, not {tag!r}")
    if tag == current.name:
        return config
    member = registry[tag]
    kept = {
        f.name: getattr(current, f.name)
        for f in dataclasses.fields(member)
        if f.init and f.name in {g.name for g in dataclasses.fields(current)}
    }
    return dataclasses.replace(config, **{name: member(**kept)})


def flatten_dict(data: dict, prefix: str = "") -> dict[str, Any]:
    """The dotted leaves of a nested mapping (a config as ``dataclasses.asdict`` writes it)."""
    leaves = {}
    for key, value in data.items():
        if isinstance(value, dict):
            leaves.update(flatten_dict(value, f"{prefix}{key}."))
        else:
            leaves[f"{prefix}{key}"] = value
    return leaves


def resolve_key(key: str, leaves: dict[str, Any], source: str) -> str:
    """The dotted path that ``key`` names (itself, or the one path it ends), or a UserError
    listing the valid keys."""
    if key in leaves:
        return key
    matches = [path for path in leaves if path.endswith("." + key)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise UserError(
            f"{source}: config key {key!r} is ambiguous; write one of {', '.join(matches)}"
        )
    names = sorted({path.rsplit(".", 1)[-1] for path in leaves} | set(leaves))
    near = difflib.get_close_matches(key, names, n=1, cutoff=0.75)
    hint = f"did you mean {near[0]!r}? " if near else ""
    raise UserError(
        f"{source}: unknown config key {key!r}; {hint}valid keys: {', '.join(sorted(leaves))}"
    )


def _elsewhere(config: Any, key: str) -> str | None:
    """Which other members of ``config``'s unions have the setting ``key``, as a phrase."""
    for f in dataclasses.fields(config):
        registry = f.metadata.get("union")
        if registry is None:
            continue
        current = getattr(config, f.name).name
        inner = key.removeprefix(f"{f.name}.")
        owners = [
            tag
            for tag, member in registry.items()
            if tag != current
            and any(path == inner or path.endswith("." + inner) for path in flatten(member()))
        ]
        if owners:
            names = ", ".join(owners[:-1]) + " and " + owners[-1] if len(owners) > 1 else owners[0]
            return (
                f"{key} is a setting of the {names} {f.name}"
                f"{'s' if len(owners) > 1 else ''}, not {current}"
            )
    return None


def _resolve(config: Any, key: str, leaves: dict[str, Any], source: str, item: str = "") -> str:
    """:func:`resolve_key`, saying so when the key belongs to another union member."""
    try:
        return resolve_key(key, leaves, source)
    except UserError:
        other = _elsewhere(config, key)
        if other:
            raise UserError(
                f"{source}{' ' + item if item else ''}: {other}; leave it out"
            ) from None
        raise


def replace_leaves(config: C, changes: dict[str, Any]) -> C:
    """``config`` with the dotted ``changes`` applied, sections rebuilt as needed."""
    direct, nested = {}, {}
    for path, value in changes.items():
        head, _, rest = path.partition(".")
        if rest:
            nested.setdefault(head, {})[rest] = value
        else:
            direct[head] = value
    for head, inner in nested.items():
        direct[head] = replace_leaves(getattr(config, head), inner)
    return dataclasses.replace(config, **direct)


def _numbers(key: str, values: Iterable, source: str) -> tuple[float, ...]:
    """A list setting (e.g. quantiles): numbers only, as a tuple of floats."""
    values = list(values)
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values):
        raise UserError(f"{source}: {key} must be a list of numbers, not {values!r}")
    return tuple(float(v) for v in values)


def _parse(key: str, raw: str, current: Any, source: str) -> Any:
    kind = type(current)
    try:
        if kind is tuple:  # "0.1,0.5,0.9", "[0.1, 0.5]"; "" or "[]" for none
            items = [t.strip() for t in raw.strip("[]() ").split(",") if t.strip()]
            return _numbers(key, [float(t) for t in items], source)
        if kind is bool:
            if raw.lower() in _TRUE | _FALSE:
                return raw.lower() in _TRUE
            raise ValueError
        if current is None:  # optional fields: "none" clears, else an int if it is one
            return None if raw.lower() in ("none", "null", "") else int(raw)
        return kind(raw)
    except ValueError:
        what = {tuple: "list of numbers", bool: "bool (true or false)"}.get(kind, kind.__name__)
        raise UserError(f"{source}: {key}={raw!r} is not a valid {what}") from None


def _check_type(key: str, value: Any, current: Any, source: str) -> Any:
    if isinstance(current, tuple):
        if not isinstance(value, (list, tuple)):
            raise UserError(f"{source}: {key} must be a list of numbers, not {value!r}")
        return _numbers(key, value, source)
    if current is None or value is None:
        return value
    if isinstance(current, bool) or isinstance(value, bool):
        if type(value) is not type(current):
            raise UserError(f"{source}: {key} must be true or false, not {value!r}")
        return value
    if isinstance(current, float) and isinstance(value, int):
        return float(value)
    if not isinstance(value, type(current)):
        what = {int: "a whole number", float: "a number", str: "text"}.get(
            type(current), f"of type {type(current).__name__}"
        )
        raise UserError(f"{source}: {key} must be {what}, not {value!r}")
    return value


def _tags(config: Any, items: dict[str, Any]) -> dict[str, Any]:
    """The items that choose a union member (``model=patch``, ``model.name: patch``)."""
    names = unions(config)
    return {
        k: v for k, v in items.items() if k in names or (k.endswith(".name") and k[:-5] in names)
    }


def apply_overrides(config: C, overrides: Iterable[str], source: str = "command line") -> C:
    """Return ``config`` with ``key=value`` items applied, each value parsed as the type of the
    field's current value. An item that chooses a union member applies first.

    Raises:
        UserError: for an item that is not key=value, an unknown or ambiguous key (the message
            lists the valid ones, or names the member the key belongs to) or a value of the
            wrong type.
    """
    items = {}
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep:
            raise UserError(f"{source}: {item!r} is not key=value")
        items[key.strip()] = raw.strip()
    tags = _tags(config, items)
    for key, tag in tags.items():
        config = switch(config, key.removesuffix(".name"), tag, source)
    leaves = flatten(config)
    changes = {}
    for key, raw in items.items():
        if key in tags:
            continue
        path = _resolve(config, key, leaves, source, f"{key}={raw}")
        changes[path] = _parse(key, raw, leaves[path], source)
    return replace_leaves(config, changes)


def apply_mapping(config: C, data: dict, source: str, strict: bool = False) -> C:
    """``config`` with the values of a YAML mapping (sections or bare keys) applied. A union
    member is chosen by its tag as a section's ``name`` (``model: {name: patch, ...}``),
    where a setting of another member is an error, or as a plain value (``model: patch``,
    the flat layout of older files and checkpoints), where settings that only other members
    have are passed over: such a file may hold the settings of several models (``strict``:
    settings given by name, refused as on the command line)."""
    items = flatten_dict(data)
    tags = _tags(config, items)
    for key, tag in tags.items():
        config = switch(config, key.removesuffix(".name"), tag, source)
    flat_layout = not strict and not any(
        k.startswith(f"{u}.") for k in items for u in unions(config)
    )
    leaves = flatten(config)
    changes = {}
    for key, value in items.items():
        if key in tags:
            continue
        if (
            flat_layout
            and key not in leaves
            and not any(p.endswith("." + key) for p in leaves)
            and _elsewhere(config, key)
        ):
            continue
        path = _resolve(config, key, leaves, source)
        changes[path] = _check_type(key, value, leaves[path], source)
    return replace_leaves(config, changes)

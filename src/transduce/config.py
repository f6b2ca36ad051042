"""Run configs: frozen dataclasses, possibly nested, set from YAML and ``key=value`` items.

A config may hold other config dataclasses as sections (a run's ``model`` is the library's
:class:`~transduce.nn.TransformerConfig`, its ``engine`` the training engine's settings), so
each hyper-parameter is declared once. A key is either dotted (``model.d_model``) or bare
(``d_model``) when exactly one field has that name; a top-level field wins over a nested one.
YAML files may use sections or bare keys alike, and ``base: OTHER.yaml`` (a path relative to
the file) starts from another file's settings, which the file's own keys then change.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from pathlib import Path
from typing import Any, Iterable, TypeVar

import yaml

from transduce.errors import UserError

C = TypeVar("C")
_TRUE, _FALSE = {"true", "yes", "1", "on"}, {"false", "no", "0", "off"}


def flatten(config: Any, prefix: str = "") -> dict[str, Any]:
    """Every leaf field of ``config`` by its dotted path, sections expanded."""
    leaves = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if dataclasses.is_dataclass(value):
            leaves.update(flatten(value, f"{prefix}{f.name}."))
        else:
            leaves[f"{prefix}{f.name}"] = value
    return leaves


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
    """The dotted path that ``key`` names, or a UserError listing the valid keys."""
    if key in leaves:
        return key
    matches = [path for path in leaves if path.rsplit(".", 1)[-1] == key]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise UserError(f"{source}: config key {key!r} is ambiguous; write one of "
                        f"{', '.join(matches)}")
    names = sorted({path.rsplit(".", 1)[-1] for path in leaves} | set(leaves))
    near = difflib.get_close_matches(key, names, n=1, cutoff=0.75)
    hint = f"did you mean {near[0]!r}? " if near else ""
    raise UserError(f"{source}: unknown config key {key!r}; {hint}valid keys: "
                    f"{', '.join(sorted(leaves))}")


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
            type(current), f"of type {type(current).__name__}")
        raise UserError(f"{source}: {key} must be {what}, not {value!r}")
    return value


def apply_overrides(config: C, overrides: Iterable[str], source: str = "command line") -> C:
    """Return ``config`` with ``key=value`` items applied, each value parsed as the type of the
    field's current value.

    Raises:
        UserError: for an item that is not key=value, an unknown or ambiguous key (the message
            lists the valid ones) or a value of the wrong type.
    """
    leaves = flatten(config)
    changes = {}
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep:
            raise UserError(f"{source}: {item!r} is not key=value")
        path = resolve_key(key, leaves, source)
        changes[path] = _parse(key, raw.strip(), leaves[path], source)
    return replace_leaves(config, changes)


def apply_mapping(config: C, data: dict, source: str) -> C:
    """``config`` with the values of a YAML mapping (sections or bare keys) applied."""
    leaves = flatten(config)
    changes = {}
    for key, value in flatten_dict(data).items():
        path = resolve_key(key, leaves, source)
        changes[path] = _check_type(key, value, leaves[path], source)
    return replace_leaves(config, changes)


def read_yaml(path: str | os.PathLike) -> dict:
    """A YAML mapping, or a UserError naming the file (and line) at fault."""
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f) or {}
    except OSError as error:
        raise UserError(f"{path}: cannot read ({error.strerror})") from None
    except UnicodeDecodeError as error:
        raise UserError(f"{path}: not UTF-8 text (byte {error.start}); save it as UTF-8"
                        ) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        raise UserError(f"{path}{where}: not valid YAML ({getattr(error, 'problem', error)})"
                        ) from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a mapping of key: value lines")
    return data


def load_config(cls: type[C], path: str | os.PathLike | None,
                overrides: Iterable[str] = ()) -> C:
    """Build ``cls`` from a YAML mapping (if ``path``) and then ``key=value`` overrides.

    Raises:
        UserError: unreadable or invalid YAML (with its line), a key ``cls`` does not have
            (the message lists the valid ones), or a value of the wrong type.
    """
    config = cls()
    if path is not None:
        for data, where in config_chain(path):
            config = apply_mapping(config, data, where)
    return apply_overrides(config, overrides)


BASE = "base"


def config_chain(path: str | os.PathLike) -> list[tuple[dict, str]]:
    """The mappings a config file stands for, each with its file, to apply in order: those
    of the file its ``base:`` key names (relative to it; followed in turn), then its own.

    Raises:
        UserError: a ``base`` that is not a path, names no file, or leads back to a file
            already in the chain.
    """
    chain, seen = [], []
    path = Path(path)
    while True:
        data = read_yaml(path)
        seen.append(path.resolve())
        base = data.pop(BASE, None)
        chain.append((data, str(path)))
        if base is None:
            return chain[::-1]
        if not isinstance(base, str) or not base.strip():
            raise UserError(f"{path}: base must be the path of another config file, not "
                            f"{base!r}")
        parent, path = path, path.parent / base
        if not path.is_file():
            raise UserError(f"{parent}: base {base}: no such file (the path is relative to "
                            f"{parent.parent}/)")
        if path.resolve() in seen:
            raise UserError(f"{parent}: base {base} leads back to {path}; a file cannot be "
                            "its own base")


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
    return [(k, f"{k} must be at least {low}, not {getattr(config, k)}") for k in keys
            if not getattr(config, k) >= low]


def in_range(config: Any, key: str, low: float, high: float,
             high_included: bool = False) -> list[Problem]:
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

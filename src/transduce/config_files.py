"""Run configs from YAML files: a file's settings, the ``base:`` file it starts from, and
``key=value`` items after them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, TypeVar

import yaml

from transduce.config import apply_mapping, apply_overrides, unions
from transduce.errors import UserError

C = TypeVar("C")


def read_yaml(path: str | os.PathLike) -> dict:
    """A YAML mapping, or a UserError naming the file (and line) at fault."""
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f) or {}
    except OSError as error:
        raise UserError(f"{path}: cannot read ({error.strerror})") from None
    except UnicodeDecodeError as error:
        raise UserError(f"{path}: not UTF-8 text (byte {error.start}); save it as UTF-8") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        raise UserError(
            f"{path}{where}: not valid YAML ({getattr(error, 'problem', error)})"
        ) from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a mapping of key: value lines")
    return data


def load_config(
    cls: type[C],
    path: str | os.PathLike | None,
    overrides: Iterable[str] = (),
    chosen: dict | None = None,
) -> C:
    """Build ``cls`` from a YAML mapping (if ``path``) and then ``key=value`` overrides.
    A union member the overrides (or ``chosen``: settings by name) choose (``model=linear``)
    is the one a file in the flat layout is read for, so that the file's settings of that
    member are kept, as they were when every model's settings were one config's.

    Raises:
        UserError: unreadable or invalid YAML (with its line), a key ``cls`` does not have
            (the message lists the valid ones), or a value of the wrong type.
    """
    overrides = list(overrides)
    config = cls()
    given = {
        **{k.strip(): v for k, _, v in (o.partition("=") for o in overrides)},
        **(chosen or {}),
    }
    tags = {u: str(given[u]).strip() for u in unions(config) if u in given}
    if path is not None:
        for data, where in config_chain(path):
            flat = {u: tag for u, tag in tags.items() if not isinstance(data.get(u), dict)}
            config = apply_mapping(config, {**data, **flat}, where)
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
            raise UserError(f"{path}: base must be the path of another config file, not {base!r}")
        parent, path = path, path.parent / base
        if not path.is_file():
            raise UserError(
                f"{parent}: base {base}: no such file (the path is relative to {parent.parent}/)"
            )
        if path.resolve() in seen:
            raise UserError(
                f"{parent}: base {base} leads back to {path}; a file cannot be its own base"
            )

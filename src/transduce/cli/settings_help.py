"""A run command's --help: every setting of its config, with its default and meaning."""

from __future__ import annotations

import argparse
import dataclasses
import re
import textwrap
from typing import Any

from transduce.config import flatten


def setting_meanings(config: Any) -> dict[str, str | None]:
    """Each dotted setting of ``config`` and its one-line meaning (None where undeclared): the
    owner's ``HELP`` first (it may speak of a section's key: "layers.max_len"), then the
    section's own ``HELP``."""
    meanings = {}
    for key in flatten(config):
        owner, leaf = config, key
        meaning = getattr(config, "HELP", {}).get(key)
        while meaning is None and "." in leaf:
            section, leaf = leaf.split(".", 1)
            owner = getattr(owner, section)
            meaning = getattr(owner, "HELP", {}).get(leaf)
        meanings[key] = meaning
    return meanings


def settings_epilog(config: Any) -> str:
    """Every setting of a run config with its default and meaning, for a command's --help
    (printed as is by :class:`SettingsHelpFormatter`)."""
    leaves = flatten(config)
    # a nested model config's settings that this command never reads (a forecaster's
    # vocabulary sizes) are not offered in its help
    rows = [
        (f"{k}={v}", meaning or "")
        for (k, v), meaning in zip(leaves.items(), setting_meanings(config).values())
        if not (meaning or "").startswith("unused")
    ]
    rows += _other_members(config, set(leaves))
    width = max(len(left) for left, _ in rows) + 2
    lines = [f"  {left:<{width}}{meaning}" for left, meaning in rows]
    return (
        "settings, as key=value anywhere on the line (a key inside a section may be given "
        "bare: d_model for model.d_model), with their defaults:\n" + "\n".join(lines)
    )


def other_members(config: Any, shown: set[str]) -> dict[str, tuple[Any, list[str], str]]:
    """The settings of a union's other members (another ``model:``) not in ``shown``: dotted
    key → (default, the members that have it, meaning). For --help and the documentation's
    configuration page."""
    rows: dict[str, tuple[Any, list[str], str]] = {}
    for f in dataclasses.fields(config):
        for tag, member in (f.metadata.get("union") or {}).items():
            instance = member()
            meanings = setting_meanings(instance)
            for key, value in flatten(instance).items():
                path = f"{f.name}.{key}"
                if path in shown or (meanings[key] or "").startswith("unused"):
                    continue
                rows.setdefault(path, (value, [], meanings[key] or ""))[1].append(tag)
    return rows


def _other_members(config: Any, shown: set[str]) -> list[tuple[str, str]]:
    """Rows for the settings of a union's other members, each with the members that have it."""
    return [
        (
            f"{path}={value}",
            f"{' and '.join(tags)} {'models' if len(tags) > 1 else 'model'}: {meaning}",
        )
        for path, (value, tags, meaning) in other_members(config, shown).items()
    ]


class SettingsHelpFormatter(argparse.HelpFormatter):
    """Wraps descriptions as usual, and the rows of a settings table (indented lines) under
    their meaning column."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out = []
        for line in text.splitlines():
            row = re.match(r"  \S+\s{2,}", line)
            hang = " " * (row.end() if row else len(indent))
            out.append(
                textwrap.fill(
                    line,
                    max(width, len(hang) + 30),
                    initial_indent="" if row else indent,
                    subsequent_indent=hang,
                )
            )
        return "\n".join(out)

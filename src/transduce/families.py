"""The task families: one declaration each of how its runs are told apart, loaded,
described, served and driven from the command line.

A family names its code as ``"module:attribute"`` strings, as Python packaging's entry
points do, so that this table sits at the bottom of the layers (``runs`` reads its kinds and
commands) while the code it names lives where it belongs (``api``, ``serve``, ``cli``), and
nothing is imported before it is used: ``transduce --help`` imports no model code.

What reads the table: ``runs`` (the checkpoint kinds a record may hold, the command that
resumes a run), ``api.loading`` (``transduce.load``), ``api.describe`` (``/info``),
``serve.app`` (the endpoints) and ``cli.main`` (the commands). Adding a task family is one
:func:`register` call (``tests/test_families.py`` registers a whole one in one file).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    """A command of ``transduce``: ``module`` has ``add_parser(commands, summary)``."""

    name: str
    summary: str
    module: str


@dataclass(frozen=True, kw_only=True)
class Family:
    """A task family and where its code is.

    Attributes:
        name: what ``/info`` calls it (``"family"``).
        kinds: the checkpoint kinds its runs hold (``runs.record(kind, ...)``).
        trained_by: the command that trains and resumes its runs, per kind.
        load: ``(path, device, precision, verbose) -> model``: what ``transduce.load`` gives.
        describe: ``(path, model) -> dict``: what ``/info`` says (its ``kind`` included).
        serve: ``(app, model, info, tools) -> None``: adds the family's endpoints to a
            ``transduce serve`` app (``tools``: ``in_worker`` and the ``batcher``).
        endpoints: the POST paths ``serve`` may add; a server of another family answers
            them with a 404 that names the model it holds.
        unit: what a request carries many of, for the error of a body over the size limit.
        commands: its commands of the command line.
        claims: ``(path) -> bool`` for folders of the family that hold no checkpoint of
            its kinds (an export, an ensemble, a blend); tried before the checkpoint's kind.
    """

    name: str
    kinds: tuple[str, ...]
    trained_by: dict[str, str]
    load: str
    describe: str
    serve: str
    endpoints: tuple[str, ...]
    unit: str
    commands: tuple[Command, ...] = ()
    claims: str | None = None


_FAMILIES: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Add ``family``; its name, kinds and commands must be new."""
    taken_kinds = {k for f in _FAMILIES.values() for k in f.kinds}
    taken_commands = {c.name for f in _FAMILIES.values() for c in f.commands}
    if family.name in _FAMILIES:
        raise ValueError(f"a family named {family.name!r} is registered already")
    if set(family.kinds) & taken_kinds or {c.name for c in family.commands} & taken_commands:
        raise ValueError(f"{family.name}: a kind or command of another family")
    if set(family.trained_by) != set(family.kinds):
        raise ValueError(f"{family.name}: trained_by must name a command for each kind")
    _FAMILIES[family.name] = family
    return family


def unregister(name: str) -> None:
    _FAMILIES.pop(name, None)


def families() -> tuple[Family, ...]:
    return tuple(_FAMILIES.values())


def kinds() -> tuple[str, ...]:
    """Every checkpoint kind a registered family holds."""
    return tuple(k for f in _FAMILIES.values() for k in f.kinds)


def of_kind(kind: str) -> Family:
    """The family whose runs hold checkpoints of ``kind``; ValueError if none does."""
    for family in _FAMILIES.values():
        if kind in family.kinds:
            return family
    raise ValueError(f"kind must be one of {', '.join(kinds())}, not {kind!r}")


def named(name: str) -> Family:
    return _FAMILIES[name]


def trained_by(kind: str) -> str | None:
    """The command that trains and resumes runs of ``kind``; None for an unknown kind."""
    return next((f.trained_by[kind] for f in _FAMILIES.values() if kind in f.kinds), None)


def commands() -> dict[str, Command]:
    """Every family's commands, by name, in the order of registration."""
    return {c.name: c for f in _FAMILIES.values() for c in f.commands}


def resolve(reference: str):
    """The object a ``"module:attribute"`` string names (imported now)."""
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


# The families transduce comes with. The demo's number words and translation are two kinds
# of run (another command trains each) opened, described and served by the same code.
TRANSLATOR = dict(
    load="transduce.api.translation:load_translator",
    describe="transduce.api.describe:describe_translator",
    serve="transduce.serve.translation:add_routes",
    endpoints=("/translate", "/attention", "/explain", "/explain/head"),
    unit="sentences",
)
register(
    Family(
        name="numbers",  # the demo
        kinds=("numbers",),
        trained_by={"numbers": "transduce demo"},
        **TRANSLATOR,
        commands=(
            Command(
                "demo",
                "train an English→German number translator on built-in data (~2 min on 2 CPU "
                "cores)",
                "transduce.cli.demo",
            ),
        ),
    )
)
register(
    Family(
        name="translation",
        kinds=("translation",),
        trained_by={"translation": "transduce train"},
        **TRANSLATOR,
        commands=(
            Command(
                "train",
                "train a translation model on parallel text (resumes a run directory)",
                "transduce.cli.train",
            ),
            Command(
                "average",
                "average the last N checkpoints of a run (paper §6.1)",
                "transduce.cli.average",
            ),
            Command(
                "tune",
                "choose averaging, length penalty and n-gram block on validation data",
                "transduce.cli.tune",
            ),
            Command("translate", "translate text with a trained model", "transduce.cli.translate"),
            Command(
                "attention",
                "draw what a model attends to when it translates a sentence",
                "transduce.cli.attention",
            ),
            Command(
                "evaluate",
                "score translations with sacreBLEU (BLEU, lowercased BLEU, chrF)",
                "transduce.cli.evaluate",
            ),
            Command(
                "export", "export a model for fast serving (CTranslate2)", "transduce.cli.export"
            ),
        ),
        claims="transduce.api.translation:claims",
    )
)
register(
    Family(
        name="forecast",
        kinds=("forecast",),
        trained_by={"forecast": "transduce forecast train"},
        load="transduce.api.forecasting:load_forecaster",
        describe="transduce.api.describe:describe_forecaster",
        serve="transduce.serve.forecast:add_routes",
        endpoints=(
            "/forecast",
            "/explain/forecast",
            "/forecast/series",
            "/explain/forecast/series",
        ),
        unit="rows",
        commands=(
            Command(
                "forecast",
                "forecast time series (train, test, backtest, calibrate, blend, predict, plot)",
                "transduce.cli.forecast",
            ),
        ),
        claims="transduce.runs:is_blend",
    )
)
register(
    Family(
        name="text",
        kinds=("text",),
        trained_by={"text": "transduce text train"},
        load="transduce.api.text:load_text_model",
        describe="transduce.api.text:describe_text",
        serve="transduce.serve.text:add_routes",
        endpoints=("/classify", "/tag", "/entities", "/explain/text"),
        unit="texts",
        commands=(
            Command(
                "text",
                "classify sentences, tag words, extract entities (train, test, predict)",
                "transduce.cli.text",
            ),
        ),
    )
)

"""The decoding a model is used with unless told otherwise.

A run directory may carry ``decoding.json``: the beam size, length penalty α, n-gram block
and number of averaged checkpoints that `transduce tune` chose on validation data. Everything
that translates with the run (``translate``, ``serve``, ``attention``, ``transduce.load``,
``export``) takes those values, unless given others; without the file, the paper's beam 5
and α 0.6 (§6.1) with no n-gram block.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from transduce import runs
from transduce.errors import UserError
from transduce.io import write_text


@dataclass(frozen=True, kw_only=True)
class Decoding:
    """How to search: ``beam`` 1 is greedy; ``lenpen`` is α of Wu et al. (2016);
    ``no_repeat_ngram`` forbids any N-gram of subwords twice (0: off); ``last``: the
    number of step checkpoints averaged into ``averaged.pt`` when chosen (0: unknown);
    ``source``: where these values come from, for messages."""

    beam: int = 5
    lenpen: float = 0.6
    no_repeat_ngram: int = 0
    last: int = 0
    source: str = "the paper's beam 5 and α 0.6"

    def describe(self) -> str:
        block = f", no {self.no_repeat_ngram}-gram twice" if self.no_repeat_ngram else ""
        return f"beam {self.beam}, α {self.lenpen:g}{block} ({self.source})"

    def values(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "source"}


PAPER = Decoding()


def lenpen_ok(value) -> bool:
    """Whether ``value`` can be a length penalty α: a finite real number of at least 0."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and 0 <= value < math.inf


def check(values: dict, where: str) -> Decoding:
    """A :class:`Decoding` from a mapping, or a UserError naming ``where`` it came from."""
    try:
        beam, lenpen = int(values["beam"]), float(values["lenpen"])
        block, last = int(values.get("no_repeat_ngram", 0)), int(values.get("last", 0))
    except (KeyError, TypeError, ValueError) as error:
        raise UserError(
            f"{where}: damaged decoding settings ({type(error).__name__}: "
            f"{error}); run transduce tune again or delete the file"
        ) from None
    if beam < 1 or not lenpen_ok(lenpen) or block < 0 or last < 0:
        raise UserError(
            f"{where}: beam must be at least 1, lenpen finite and at least 0, "
            "no_repeat_ngram and last at least 0; run transduce tune again"
        )
    return Decoding(
        beam=beam,
        lenpen=lenpen,
        no_repeat_ngram=block,
        last=last,
        source=f"chosen on validation data, {where}",
    )


def read(run_dir: str | os.PathLike) -> Decoding:
    """The run's chosen decoding, else :data:`PAPER`."""
    path = Path(run_dir) / runs.DECODING
    if not path.is_file():
        return PAPER
    try:
        values = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserError(
            f"{path}: not a JSON file ({error}); run transduce tune again or delete it"
        ) from None
    if not isinstance(values, dict):
        raise UserError(f"{path}: not a JSON object; run transduce tune again or delete it")
    return check(values, str(path))


def write(run_dir: str | os.PathLike, chosen: Decoding, details: dict) -> Path:
    """Store ``chosen`` (and how it was chosen) as the run's decoding."""
    path = Path(run_dir) / runs.DECODING
    write_text(path, json.dumps({**chosen.values(), **details}, indent=2) + "\n")
    return path


def search_options(no_repeat_ngram: int = 0, early_exit: bool = False) -> dict:
    """The keywords a ``search`` takes beyond beam, α and n-best, only those switched on:
    a search that knows neither (a peer's, in the speed benchmark) is called as before."""
    options: dict = {"no_repeat_ngram": no_repeat_ngram} if no_repeat_ngram else {}
    if early_exit:
        options["early_exit"] = True
    return options


def resolve(
    default: Decoding,
    beam: int | None = None,
    lenpen: float | None = None,
    no_repeat_ngram: int | None = None,
) -> Decoding:
    """``default`` with the values given here (None: keep the default's)."""
    given = {
        k: v
        for k, v in (("beam", beam), ("lenpen", lenpen), ("no_repeat_ngram", no_repeat_ngram))
        if v is not None
    }
    if not given:
        return default
    source = (
        "given"
        if len(given) == 3
        else f"{', '.join(f'{k} given' for k in given)}; the rest: {default.source}"
    )
    return Decoding(**{**default.values(), **given}, source=source)

"""The Python entry point: ``transduce.load(PATH)`` gives a model ready to use.

::

    import transduce

    model = transduce.load("runs/en_de")            # a run directory, checkpoint or export
    model.translate("A man rides a bike.")          # -> "Ein Mann fährt Fahrrad."
    model.translate(["One.", "Two."], beam=5, nbest=2)   # -> [[(text, score), ...], ...]
    maps = model.attention("A man rides a bike.")   # tokens + weights of every layer/head
    models = transduce.load(["runs/en_de_1", "runs/en_de_2"])   # an ensemble of two runs

Searches use the run's ``decoding.json`` (written by ``transduce tune``) unless told
otherwise, else the paper's beam 5 and α 0.6.
"""

from __future__ import annotations

import os
from typing import Sequence

from transduce import families
from transduce.errors import UserError
from transduce.families import Family
from transduce.runs import checkpoint_kind


def load(
    path: str | os.PathLike | Sequence[str | os.PathLike],
    device: str = "auto",
    precision: str = "auto",
    verbose: bool = True,
):
    """The model in ``path``, ready to use.

    ``path`` is a run directory (its averaged, else best, else newest checkpoint), a
    checkpoint file, a directory written by ``transduce export``, an ensemble directory
    written by ``transduce tune RUN RUN … --output DIR``, or a list of translation runs or
    checkpoints to search as one ensemble (their mean probability at each step; the first
    run's ``decoding.json`` unless told otherwise). Translation and demo
    runs give a :class:`~transduce.decoding.translator.Translator` (``.translate``,
    ``.attention``); an export gives a
    :class:`~transduce.export.ctranslate2.CTranslate2Translator` (``.translate``); a
    forecasting run, or a blend of runs (``forecast blend --output DIR``), gives a
    :class:`~transduce.api.forecaster.Forecaster`
    (``.forecast``).

    Args:
        device: "auto" (CUDA, then Apple MPS, then CPU), "cpu", "mps", "cuda" or "cuda:N".
        precision: "auto" (bf16 where fast), "bf16", "fp16" or "fp32"; a translator on
            the CPU also takes "int8" (int8 weights for its linear layers). A
            CTranslate2 export keeps the quantization it was exported with: "auto" only.
            A forecaster runs on the CPU in float32: for one, only "auto" or "cpu" and
            "auto" or "fp32".
        verbose: say which checkpoint is used (on the "transduce" logger).
    """
    listed = isinstance(path, (list, tuple))
    for one in path if listed else [path]:
        if not isinstance(one, (str, os.PathLike)) or not str(one):
            raise TypeError(
                f"load() takes the path of a run directory, a checkpoint or an "
                f"export (or a list of runs), not {one!r}"[:200]
            )
    for name, value in (("device", device), ("precision", precision)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string such as 'auto', not {value!r}")
    loader = families.resolve(family_of(path).load)
    return loader(path, device=device, precision=precision, verbose=verbose)


def family_of(path) -> Family:
    """The task family whose code opens ``path`` (transduce.families): the first whose
    ``claims`` takes it (a folder without a checkpoint of its own), else the one holding the
    kind of its checkpoint (of its first run, for a list of runs)."""
    if isinstance(path, (list, tuple)):
        return _of_kind(path[0])
    for family in families.families():
        if family.claims and families.resolve(family.claims)(path):
            return family
    return _of_kind(path)


def _of_kind(path) -> Family:
    kind = checkpoint_kind(path)
    try:
        return families.of_kind(kind)
    except ValueError:
        raise UserError(
            f"{path}: holds a model of kind {kind!r}, which no task family of this transduce "
            "knows; load it with the transduce that trained it"
        ) from None


def cpu_float32_only(path, device: str, precision: str, what: str) -> None:
    """A UserError for a ``device`` or ``precision`` a model that runs on the CPU in
    float32 would ignore (as the command line refuses a setting it would ignore)."""
    ignored = [
        f"{name}={value}"
        for name, value, kept in (
            ("device", device, ("auto", "cpu")),
            ("precision", precision, ("auto", "fp32")),
        )
        if value not in kept
    ]
    if ignored:
        raise UserError(
            f"{path}: {what} runs on the CPU in float32 (its models are small); leave out "
            f"{' and '.join(ignored)}"
        )

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
from pathlib import Path
from typing import Sequence

from transduce.api.forecaster import Forecaster
from transduce.api.panel import GlobalForecaster
from transduce.decoding import defaults
from transduce.decoding.translator import Translator
from transduce.device import pick_device, resolve_precision
from transduce.errors import UserError
from transduce.export.ctranslate2 import CTranslate2Translator
from transduce.runs import checkpoint_kind, ensemble_members
from transduce.tasks.forecasting.panel import is_global
from transduce.tasks.forecasting.rundir import is_blend
from transduce.tasks.translation.loading import load_ensemble, load_translation


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
        precision: "auto" (bf16 where fast), "bf16", "fp16" or "fp32".
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
    members = list(path) if listed else ensemble_members(path)
    if members is not None:
        dev = pick_device(device)
        model, tokenizer, first_run = load_ensemble(members, verbose)
        translator = Translator(
            model=model,
            tokenizer=tokenizer,
            device=dev,
            precision=resolve_precision(precision, dev),
        )
        translator.decoding = defaults.read(first_run if listed else path)
        return translator
    if (Path(path) / "model.bin").is_file():
        return CTranslate2Translator(
            model_dir=path, device=device
        )  # its decoding: from its transduce.json
    dev = pick_device(device)

    if is_blend(path) or checkpoint_kind(path) == "forecast":
        # a setting that would be ignored is refused, as the command line does
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
                f"{path}: a forecaster runs on the CPU in float32 (its models are "
                f"small); leave out {' and '.join(ignored)}"
            )
        return GlobalForecaster(path) if is_global(path) else Forecaster(path)
    loaded = load_translation(path, verbose)
    translator = Translator(
        model=loaded.model,
        tokenizer=loaded.tokenizer,
        device=dev,
        precision=resolve_precision(precision, dev),
    )
    translator.decoding = defaults.read(loaded.run_dir)
    return translator

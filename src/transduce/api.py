"""The Python entry point: ``transduce.load(PATH)`` gives a model ready to use.

::

    import transduce

    model = transduce.load("runs/en_de")            # a run directory, checkpoint or export
    model.translate("A man rides a bike.")          # -> "Ein Mann fährt Fahrrad."
    model.translate(["One.", "Two."], beam=5, nbest=2)   # -> [[(text, score), ...], ...]
    maps = model.attention("A man rides a bike.")   # tokens + weights of every layer/head

Searches use the run's ``decoding.json`` (written by ``transduce tune``) unless told
otherwise, else the paper's beam 5 and α 0.6.
"""

from __future__ import annotations

import os
from pathlib import Path

from transduce.decoding import defaults
from transduce.decoding.translator import Translator
from transduce.device import pick_device, resolve_precision
from transduce.runs import checkpoint_kind, load_translation


def load(path: str | os.PathLike, device: str = "auto", precision: str = "auto",
         verbose: bool = True):
    """The model in ``path``, ready to use.

    ``path`` is a run directory (its averaged, else best, else newest checkpoint), a
    checkpoint file, or a directory written by ``transduce export``. Translation and demo
    runs give a :class:`~transduce.decoding.translator.Translator` (``.translate``,
    ``.attention``); an export gives a
    :class:`~transduce.export.ctranslate2.CTranslate2Translator` (``.translate``); a
    forecasting run gives a :class:`~transduce.forecasting.predict.Forecaster`
    (``.forecast``).

    Args:
        device: "auto" (CUDA, then Apple MPS, then CPU), "cpu", "mps", "cuda" or "cuda:N".
        precision: "auto" (bf16 where fast), "bf16", "fp16" or "fp32".
        verbose: say which checkpoint is used (on the "transduce" logger).
    """
    if (Path(path) / "model.bin").is_file():
        from transduce.export.ctranslate2 import CTranslate2Translator

        return CTranslate2Translator(path, device)  # its decoding: from its transduce.json
    dev = pick_device(device)
    if checkpoint_kind(path) == "forecast":
        from transduce.forecasting.predict import Forecaster

        return Forecaster(path)
    loaded = load_translation(path, verbose)
    translator = Translator(loaded.model, loaded.tokenizer, dev,
                            resolve_precision(precision, dev))
    translator.decoding = defaults.read(loaded.run_dir)
    return translator

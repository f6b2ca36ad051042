"""The Python entry point: ``transduce.api.load(PATH)`` gives a model ready to use."""

from __future__ import annotations

import os

from transduce.decoding.translator import Translator
from transduce.device import pick_device, resolve_precision
from transduce.runs import load_translation


def load(path: str | os.PathLike, device: str = "auto", precision: str = "auto",
         verbose: bool = True) -> Translator:
    """A :class:`Translator` for a run directory (its averaged, else best, else newest
    checkpoint) or a checkpoint file, with the run's tokenizer.

    Args:
        device: "auto" (CUDA, then Apple MPS, then CPU), "cpu", "mps", "cuda" or "cuda:N".
        precision: "auto" (bf16 where fast), "bf16", "fp16" or "fp32".
        verbose: say which checkpoint is used (on the "transduce" logger).
    """
    dev = pick_device(device)
    loaded = load_translation(path, verbose)
    return Translator(loaded.model, loaded.tokenizer, dev, resolve_precision(precision, dev))

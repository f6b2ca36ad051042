"""How ``transduce.load`` opens the translation family's paths (the ``translation`` and
``numbers`` entries of :mod:`transduce.families`): a run or checkpoint, an ensemble of runs,
or a CTranslate2 export."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from transduce.decoding import defaults
from transduce.decoding.translator import Translator
from transduce.device import (
    bf16_is_fast,
    fp32_packing_pays,
    pick_device,
    resolve_precision,
    retain_freed_memory,
)
from transduce.export.ctranslate2 import CTranslate2Translator, keeps_its_quantization
from transduce.nn.packed import pack_linears, packing_supported
from transduce.runs import ensemble_members
from transduce.tasks.translation.loading import load_ensemble, load_translation


def claims(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a translation folder that holds no checkpoint of its own: an
    ensemble written by ``transduce tune RUN RUN … --output``, or a CTranslate2 export."""
    return ensemble_members(path) is not None or (Path(path) / "model.bin").is_file()


def load_translator(path, device: str, precision: str, verbose: bool):
    """A :class:`Translator` for a run, checkpoint, ensemble folder or list of runs, or a
    :class:`CTranslate2Translator` for an export; see :func:`transduce.load`."""
    listed = isinstance(path, (list, tuple))
    members = list(path) if listed else ensemble_members(path)
    if members is not None:
        model, tokenizer, first_run = load_ensemble(members, verbose)
        translator = _translator(model, tokenizer, device, precision)
        translator.decoding = defaults.read(first_run if listed else path)
        return translator
    if (Path(path) / "model.bin").is_file():  # its decoding: from its transduce.json
        keeps_its_quantization(precision)
        return CTranslate2Translator(model_dir=path, device=device)
    loaded = load_translation(path, verbose)
    translator = _translator(loaded.model, loaded.tokenizer, device, precision)
    translator.decoding = defaults.read(loaded.run_dir)
    return translator


def _translator(model, tokenizer, device: str, precision: str) -> Translator:
    dev = pick_device(device)
    precision = resolve_precision(precision, dev, decoding=True)
    # loaded for decoding only: its layers need not train
    if precision == "bf16" and dev.type == "cpu" and bf16_is_fast(dev) and packing_supported():
        pack_linears(model)
    elif precision == "fp32" and dev.type == "cpu" and packing_supported(torch.float32):
        if fp32_packing_pays():  # faster than MKL on AMD CPUs
            pack_linears(model, torch.float32)
    if dev.type == "cpu":  # a search makes and frees MiB-sized tensors by the thousand
        retain_freed_memory()
    return Translator(model=model, tokenizer=tokenizer, device=dev, precision=precision)

"""Loading a translation model (or an ensemble of them) with the tokenizer its run trained."""

from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path
from typing import Any

from transduce.data.numbers import NumbersTokenizer
from transduce.data.tokenizer import SubwordTokenizer
from transduce.decoding.ensemble import Ensemble, check_vocabularies
from transduce.errors import UserError
from transduce.nn import TransformerConfig, build_transformer
from transduce.runs import TOKENIZER, build_model, find_checkpoint, load_checkpoint

log = logging.getLogger("transduce.runs")  # "using CHECKPOINT", as the run's own notes


# ---------------------------------------------------------------- loading a model
@dataclasses.dataclass
class LoadedTranslation:
    model: Any  # transduce.nn.Transformer, eval mode, on the CPU
    tokenizer: Any  # transduce.data.tokenizer.SubwordTokenizer
    checkpoint: Path
    state: dict
    run_dir: Path  # the run the checkpoint belongs to (its spm.model, decoding.json)


def load_translation(path: str | os.PathLike, verbose: bool = True) -> LoadedTranslation:
    """The Transformer and tokenizer of a run directory or checkpoint, checked to belong
    together (the checkpoint records the fingerprint of the run's ``spm.model``). A demo
    run (kind "numbers") gets its fixed word vocabulary. With ``verbose``, says which
    checkpoint it loaded."""
    checkpoint, run_dir = find_checkpoint(path)
    state = load_checkpoint(checkpoint)
    kind = state.get("kind", "translation")
    if kind == "numbers":
        tokenizer = NumbersTokenizer()
    elif kind == "translation":
        tokenizer = _run_tokenizer(checkpoint, run_dir, state)
    else:
        raise UserError(
            f"{checkpoint}: holds a {kind} model, not a translation model; use "
            "the forecast commands"
        )
    model = build_model(checkpoint, state, lambda c: build_transformer(TransformerConfig(**c)))
    if verbose:
        log.warning(f"transduce: using {checkpoint}")
    return LoadedTranslation(model.eval(), tokenizer, checkpoint, state, run_dir)


def load_ensemble(paths: list[str | os.PathLike], verbose: bool = True):
    """(:class:`~transduce.decoding.ensemble.Ensemble` of the translation models in
    ``paths``, their shared tokenizer, the first member's run directory). Each path is a run
    directory (its averaged, else best, else newest checkpoint) or a checkpoint file; a
    UserError names the first member whose vocabulary differs."""
    if not paths:
        raise UserError("an ensemble needs at least one run directory or checkpoint")
    loaded = [load_translation(p, verbose) for p in paths]
    check_vocabularies(paths, [m.tokenizer for m in loaded])
    return Ensemble([m.model for m in loaded]).eval(), loaded[0].tokenizer, loaded[0].run_dir


def _run_tokenizer(checkpoint: Path, run_dir: Path, state: dict):
    tokenizer_path = run_dir / TOKENIZER
    if not tokenizer_path.is_file():
        raise UserError(
            f"{tokenizer_path}: missing; a checkpoint needs the spm.model of "
            "the run directory it was trained in"
        )
    tokenizer = SubwordTokenizer(tokenizer_path)
    if state.get("tokenizer") != tokenizer.fingerprint:
        raise UserError(
            f"{checkpoint}: trained with another tokenizer than "
            f"{tokenizer_path}; use the checkpoint's own run directory"
        )
    return tokenizer

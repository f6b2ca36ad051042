"""What a loaded model is, for people: its kind, checkpoint (named within its run, never by
an absolute path), sizes, scores and an example input. ``transduce serve`` answers it at
/info and shows it on its page."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from transduce import families, runs
from transduce.api.loading import family_of
from transduce.decoding.translator import Translator


def describe(path: str, model) -> dict:
    """What /info says: the task ``family`` and ``kind`` of model, its checkpoint and sizes,
    its scores if known, and an example input for the page. Each family describes its own
    (``describe`` in :mod:`transduce.families`)."""
    family = family_of(path)
    return {"family": family.name, **families.resolve(family.describe)(path, model)}


def describe_forecaster(path: str, model) -> dict:
    """/info of a forecasting run, a global run or a blend: what the forecaster says of
    itself (``info``)."""
    return model.info()


def describe_translator(path: str, model) -> dict:
    """/info of a translation or demo run, an ensemble or a CTranslate2 export."""
    decoding = dataclasses.asdict(model.decoding)
    if not isinstance(model, Translator):
        return {
            "kind": "ctranslate2",
            "export": Path(path).name,
            "description": f"CTranslate2 export {Path(path).name}",
            "scores": {},
            "example": "",
            "decoding": decoding,
            "attention": False,
        }

    params = sum(p.numel() for p in model.model.parameters())
    members = runs.ensemble_members(path)
    if members is not None:
        return {
            "kind": "translation",
            "ensemble": [Path(m).name for m in members],
            "description": f"ensemble of {len(members)} translation models, {params:,} "
            f"parameters in all, {Path(path).name}",
            "parameters": params,
            "scores": {},
            "example": "",
            "decoding": decoding,
            "attention": False,
        }

    checkpoint, run_dir = runs.find_checkpoint(path)
    # named within its run, never by its absolute path: the page may be seen from afar
    checkpoint = (
        (Path(run_dir).name / Path(checkpoint).relative_to(run_dir)).as_posix()
        if Path(checkpoint).is_relative_to(run_dir)
        else Path(checkpoint).name
    )
    numbers = type(model.tokenizer).__name__ == "NumbersTokenizer"
    return {
        "kind": "numbers" if numbers else "translation",
        "checkpoint": checkpoint,
        "description": f"{'demo numbers' if numbers else 'translation'} model, "
        f"{params:,} parameters, {checkpoint}",
        "parameters": params,
        "scores": runs.scores(run_dir),
        "example": "three hundred twenty-one" if numbers else "",
        "decoding": decoding,
        "attention": True,
    }

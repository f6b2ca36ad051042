"""Sentence-level metrics that need no external scorer."""

from __future__ import annotations

import re
from typing import Sequence


def exact_match(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Fraction of hypotheses equal to their reference, as a float in [0, 1]."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    if not references:
        raise ValueError("no references to compare with")
    return sum(h == r for h, r in zip(hypotheses, references)) / len(references)


_REPEATED_UNIT = re.compile(r"(.{1,4}?)\1{4,}")  # a 1–4 character unit, then 4+ copies


def is_looping(hypothesis: str, source: str) -> bool:
    """A translation that loops on a subword: a 1–4 character unit repeated 5 or more times
    in a row ("Vagagagagaga"), or an output more than three times its source's length."""
    return bool(_REPEATED_UNIT.search(hypothesis)) or len(hypothesis) > 3 * max(len(source), 1)


def looping_rate(hypotheses: Sequence[str], sources: Sequence[str]) -> float:
    """Fraction of translations that loop (see :func:`is_looping`), in [0, 1]."""
    if len(hypotheses) != len(sources):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(sources)} sources")
    return sum(is_looping(h, s) for h, s in zip(hypotheses, sources)) / max(len(sources), 1)

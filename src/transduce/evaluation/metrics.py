"""Sentence-level metrics that need no external scorer."""

from __future__ import annotations

from typing import Sequence


def exact_match(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Fraction of hypotheses equal to their reference, as a float in [0, 1]."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    if not references:
        raise ValueError("no references to compare with")
    return sum(h == r for h, r in zip(hypotheses, references)) / len(references)

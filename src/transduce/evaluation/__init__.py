"""Scoring translations."""

from transduce.evaluation.metrics import exact_match

__all__ = ["exact_match"]

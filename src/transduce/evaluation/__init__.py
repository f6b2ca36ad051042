"""Scoring translations."""

from transduce.evaluation.bleu import bleu, corpus_scores, literature_tokenize
from transduce.evaluation.metrics import exact_match

__all__ = ["bleu", "corpus_scores", "exact_match", "literature_tokenize"]

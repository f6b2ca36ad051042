"""Scoring translations."""

from transduce.evaluation.bleu import bleu, corpus_scores, literature_tokenize, moses_languages
from transduce.evaluation.metrics import exact_match, is_looping, looping_rate

__all__ = [
    "bleu",
    "corpus_scores",
    "exact_match",
    "is_looping",
    "literature_tokenize",
    "looping_rate",
    "moses_languages",
]

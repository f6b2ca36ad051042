"""Search over a model's output distributions, kept apart from the models themselves."""

from transduce.decoding.beam import Hypothesis, beam_search, length_penalty
from transduce.decoding.greedy import Seq2Seq, greedy_search

__all__ = ["Hypothesis", "Seq2Seq", "beam_search", "greedy_search", "length_penalty"]

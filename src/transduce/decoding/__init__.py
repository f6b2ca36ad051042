"""Search over a model's output distributions, kept apart from the models themselves."""

from transduce.decoding.greedy import Seq2Seq, greedy_search

__all__ = ["Seq2Seq", "greedy_search"]

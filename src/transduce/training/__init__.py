"""Training pieces: the loss, the optimiser and the schedule."""

from transduce.training.loss import LabelSmoothedCrossEntropy
from transduce.training.schedule import noam_rate, paper_adam, warmup_schedule

__all__ = ["LabelSmoothedCrossEntropy", "noam_rate", "paper_adam", "warmup_schedule"]

"""Training pieces: the loss, the optimiser and the schedule (the loop is training.engine)."""

from transduce.training.loss import LabelSmoothedCrossEntropy, linear_label_smoothed_ce
from transduce.training.schedule import (
    adamw,
    inverse_sqrt_rate,
    noam_rate,
    paper_adam,
    schedule_for,
    warmup_schedule,
)

__all__ = [
    "LabelSmoothedCrossEntropy",
    "adamw",
    "linear_label_smoothed_ce",
    "inverse_sqrt_rate",
    "noam_rate",
    "paper_adam",
    "schedule_for",
    "warmup_schedule",
]

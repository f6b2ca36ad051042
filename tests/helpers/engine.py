"""A task small enough to drive the training engine by hand, and an engine for it."""

import logging

import torch
from torch import nn

from transduce.training.distributed import Session
from transduce.training.engine import Engine, EngineConfig


class ToyTask:
    """Least squares with a 3 → 1 linear map; plain SGD at rate 1, so an update is −grad."""

    kind, metric, higher_is_better, unit = "numbers", "score", True, "values"

    def __init__(self, batches):
        self._batches = batches

    def build_model(self):
        return nn.Linear(3, 1, bias=False)

    def build_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=1.0), None

    def batches(self, epoch):
        return self._batches

    def loss(self, model, batch):
        x, y = batch
        return ((model(x) - y) ** 2).sum(), y.numel()

    def validate(self, model):
        return {"score": 0.0}

    def record(self):
        return {"model_config": {}}


def engine_for(task, tmp_path, **settings):
    cfg = EngineConfig(**{"max_steps": 1, "valid_every": 1, **settings})
    session = Session(0, 1, torch.device("cpu"), "fp32")
    return Engine(
        task=task,
        cfg=cfg,
        session=session,
        run_dir=tmp_path / "run",
        config={},
        log=logging.getLogger("test"),
    )

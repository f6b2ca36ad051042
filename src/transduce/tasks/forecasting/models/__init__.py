"""The forecasting models a run may choose (``model: NAME``), each a config of its own in a
module of this package. Adding one: write its module (a :class:`ModelConfig` subclass with
its settings, rules and builder) and add it to ``MODELS`` below (or call :func:`register`)."""

from __future__ import annotations

from transduce.tasks.forecasting.models.base import ModelConfig, NeuralConfig, NormalisedConfig
from transduce.tasks.forecasting.models.channel import ChannelConfig
from transduce.tasks.forecasting.models.linear import LinearConfig
from transduce.tasks.forecasting.models.logsparse import LogSparseConfig
from transduce.tasks.forecasting.models.patch import PatchConfig
from transduce.tasks.forecasting.models.repeat import RepeatConfig
from transduce.tasks.forecasting.models.sparse import SparseConfig
from transduce.tasks.forecasting.models.transformer import SeriesTransformerConfig

MODELS: dict[str, type[ModelConfig]] = {}


def register(model: type[ModelConfig]) -> type[ModelConfig]:
    """Make ``model`` a choice of ``model:`` under its ``NAME``."""
    MODELS[model.NAME] = model
    return model


for _model in (
    SeriesTransformerConfig,
    PatchConfig,
    ChannelConfig,
    LinearConfig,
    SparseConfig,
    RepeatConfig,
    LogSparseConfig,
):
    register(_model)

NEURAL = tuple(tag for tag, model in MODELS.items() if issubclass(model, NeuralConfig))

__all__ = ["MODELS", "NEURAL", "ModelConfig", "NeuralConfig", "NormalisedConfig", "register"]

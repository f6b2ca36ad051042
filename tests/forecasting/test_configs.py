from pathlib import Path

import pytest

from transduce.config import load_config
from transduce.tasks.forecasting.config import ForecastConfig
from transduce.tasks.translation.config import TrainConfig

CONFIGS = Path(__file__).parents[2] / "configs"


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("forecast_*.yaml")), ids=lambda p: p.name)
def test_forecast_configs_load_and_validate(path):
    cfg = load_config(ForecastConfig, path)
    cfg.validate(str(path))
    assert path.read_text().startswith("#")  # says how to run it


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("multi30k_*.yaml")), ids=lambda p: p.name)
def test_translation_configs_load_and_validate(path):
    load_config(TrainConfig, path).validate(str(path))
    assert path.read_text().startswith("#")

from pathlib import Path

import pytest

from transduce.config_files import load_config
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


def _flat(record: dict) -> dict:
    """A config record in the layout checkpoints had before each model had its own config:
    the model's name and every model's settings at the top, its layers a section of the run."""
    import dataclasses

    from transduce.tasks.forecasting.models import MODELS

    everyone = {}
    for member in MODELS.values():
        everyone.update({k: v for k, v in dataclasses.asdict(member()).items() if k != "name"})
    own = {k: v for k, v in record["model"].items() if k != "name"}
    return {
        **{k: v for k, v in record.items() if k != "model"},
        **everyone,
        **own,
        "model": record["model"]["name"],
    }


def test_a_checkpoint_in_the_earlier_flat_layout_loads_and_forecasts_the_same(
    forecast_run, tmp_path
):
    import shutil

    from transduce import runs
    from transduce.api.forecaster import Forecaster

    run, _ = forecast_run
    old = tmp_path / "old"
    shutil.copytree(run, old)
    (old / runs.CONFIG).unlink()  # the settings come from the checkpoint
    for path in runs.checkpoint_dir(old).iterdir():
        state = runs.load_checkpoint(path)
        state["config"] = _flat(state["config"])
        assert state["config"]["model"] == "linear" and "patch_len" in state["config"]
        runs.save_checkpoint(path, state)
    then, now = Forecaster(old), Forecaster(run)
    assert then.cfg == now.cfg
    assert then.predict() == now.predict()

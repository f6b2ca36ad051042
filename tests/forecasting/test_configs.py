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
        **{k: v for k, v in record.items() if k not in ("model", "layout")},
        **everyone,
        **own,
        "model": record["model"]["name"],
        # the layout was a word then, its settings beside it
        "layout": record["layout"]["name"],
        "columns": record["layout"].get("columns", ""),
        "inputs": record["layout"].get("inputs", ""),
        "season": 0,
        "scaling": "mean",
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


def test_a_layouts_settings_exist_only_under_it_and_old_flat_files_still_read(tmp_path):
    """layout is a tagged union like model: season and scaling are the long layout's, so
    a wide run refuses them by construction; a run's config.yaml from before the union
    (layout: long beside its settings) still reads."""
    from transduce import runs
    from transduce.errors import UserError
    from transduce.tasks.forecasting.config import ForecastConfig

    long = ForecastConfig.of(csv="t.csv", layout="long", season=24, scaling="log")
    assert (long.layout.name, long.layout.season, long.layout.scaling) == ("long", 24, "log")
    for setting in ({"scaling": "log"}, {"season": 24}):
        with pytest.raises(UserError, match="is a setting of the long layout, not wide"):
            ForecastConfig.of(csv="t.csv", **setting)
    with pytest.raises(UserError, match="scaling must be one of mean, log, not 'exp'"):
        ForecastConfig.of(csv="t.csv", layout="long", scaling="exp").validate("run.yaml")
    with pytest.raises(UserError, match="columns is a setting of the wide layout, not long"):
        ForecastConfig.of(csv="t.csv", layout="long", columns="y")
    (tmp_path / "config.yaml").write_text(  # as runs wrote it before the union
        "csv: t.csv\ncolumns: ''\ninputs: ''\nlayout: long\nseason: 24\nscaling: log\n"
        "model: patch\n"
    )
    assert runs.read_config(tmp_path, ForecastConfig).layout == long.layout

"""Each model's settings are its own (a tagged union chosen by ``model``): a setting of
another model, given by name, is refused in one line that names its models; a YAML file in
the older flat layout may hold several models' settings."""

import pytest

from tests.helpers.forecasting import refused, write_sine
from transduce.api.forecaster import Forecaster
from transduce.config import apply_mapping, apply_overrides
from transduce.errors import UserError
from transduce.tasks.forecasting.config import ForecastConfig


@pytest.mark.parametrize(
    "settings, message",
    [
        (
            ["model=linear", "patch_len=8"],
            "command line patch_len=8: patch_len is a setting of "
            "the patch model, not linear; leave it out",
        ),
        (
            ["model=sparse", "period=24", "d_model=8"],
            "command line d_model=8: d_model is a setting of the transformer, patch, channel and "
            "logsparse models, not sparse",
        ),
        (["model=patch", "experts=2"], "experts is a setting of the channel model, not patch"),
        (["model=patch", "label_length=4"], "label_length is a setting of the transformer model"),
        (
            ["model=linear", "calendar=false"],
            "calendar is a setting of the transformer, patch and logsparse models, not linear",
        ),
        (
            ["model=repeat", "revin=false"],
            "revin is a setting of the transformer, patch, channel, "
            "linear, sparse and logsparse models, not repeat",
        ),
        (["model=patch", "half_life=0"], "half_life is a setting of the repeat model, not patch"),
        (
            ["model=channel", "residual_attention=false"],
            "residual_attention is a setting of the patch model, not channel",
        ),
        (
            ["model=repeat", "head_dropout=0.1"],
            "head_dropout is a setting of the patch and channel models, not repeat",
        ),
        (
            ["model=patch", "layers.tie_output=false"],
            "command line layers.tie_output=false: "
            "layers.tie_output is not read by forecasting (a translation setting); leave it out",
        ),
        (
            ["model=transformer", "max_len=10"],
            "max_len is not read by forecasting (its positions cover input_length + horizon)",
        ),
    ],
)
def test_a_setting_of_another_model_is_one_line(tmp_path, capsys, settings, message):
    assert message in refused(tmp_path, capsys, ["max_epochs=1", "threads=1", *settings])


def test_the_model_switches_first_and_keeps_the_settings_the_two_share():
    cfg = apply_overrides(
        ForecastConfig(), ["experts=8", "model=channel", "d_model=32", "quantiles=0.1,0.9"]
    )
    assert cfg.model.name == "channel" and cfg.model.experts == 8
    assert cfg.model.layers.d_model == 32 and cfg.quantiles == (0.1, 0.9)
    linear = apply_overrides(cfg, ["model=linear", "revin=false"])
    assert linear.model.name == "linear" and linear.model.revin is False
    assert linear.quantiles == ()  # a baseline forecasts no quantiles
    with pytest.raises(
        UserError,
        match="model must be one of transformer, patch, channel, "
        "linear, sparse, repeat, logsparse, not 'lstm'",
    ):
        apply_overrides(cfg, ["model=lstm"])


def test_a_file_in_the_flat_layout_may_hold_other_models_settings_and_the_nested_not():
    flat = {
        "model": "linear",
        "patch_len": 24,
        "experts": 3,
        "trend_kernel": 25,
        "layers": {"d_model": 8},
        "revin": False,
    }
    cfg = apply_mapping(ForecastConfig(), flat, "old.yaml")
    assert cfg.model.name == "linear" and cfg.model.trend_kernel == 25
    assert cfg.model.revin is False
    nested = {"model": {"name": "linear", "patch_len": 24}}
    with pytest.raises(
        UserError, match="model.patch_len is a setting of the patch model, not linear"
    ):
        apply_mapping(ForecastConfig(), nested, "new.yaml")
    # what a run writes (config.yaml, checkpoints) reads back as it was
    import dataclasses

    written = dataclasses.asdict(cfg)
    assert written["model"]["name"] == "linear"
    assert apply_mapping(ForecastConfig(), written, "config.yaml") == cfg


def test_a_flat_file_is_read_for_the_model_the_command_line_chooses(tmp_path):
    """As when every model's settings were one config's: a patch file's transformer settings
    reach a transformer chosen on the command line or by Forecaster.fit."""
    from transduce.config_files import load_config

    path = tmp_path / "patch.yaml"
    path.write_text("model: patch\npatch_len: 8\nlabel_length: 12\ntrend_kernel: 5\n")
    assert load_config(ForecastConfig, path, ["model=transformer"]).model.label_length == 12
    assert load_config(ForecastConfig, path, chosen={"model": "linear"}).model.trend_kernel == 5
    assert load_config(ForecastConfig, path).model.patch_len == 8


def test_fit_refuses_them_too(tmp_path):
    csv = write_sine(tmp_path / "sine.csv")
    with pytest.raises(
        UserError, match="settings: stride is a setting of the patch model, not linear"
    ):
        Forecaster.fit(
            csv,
            tmp_path / "run",
            model="linear",
            stride=4,
            input_length=48,
            horizon=12,
            max_epochs=1,
            threads=1,
        )
    assert not (tmp_path / "run").exists()

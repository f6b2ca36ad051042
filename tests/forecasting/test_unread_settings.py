"""A setting given by name for a model that does not read it is refused, not ignored."""

import pytest

from tests.forecasting.test_cli import refused, write_sine
from transduce.api.forecaster import Forecaster
from transduce.errors import UserError
from transduce.tasks.forecasting.config import READ_BY, ForecastConfig


@pytest.mark.parametrize("settings, message", [
    (["model=linear", "patch_len=8"], "command line patch_len=8: patch_len is read by the "
                                      "patch model, not linear; leave it out"),
    (["model=sparse", "period=24", "d_model=8"],
     "command line d_model=8: d_model is read by the transformer, patch and channel "
     "models, not sparse"),
    (["model=patch", "experts=2"], "experts is read by the channel model, not patch"),
    (["model=patch", "label_length=4"], "label_length is read by the transformer model"),
    (["model=channel", "layers.num_decoder_layers=2"],
     "layers.num_decoder_layers is read by the transformer model, not channel"),
    (["model=repeat", "head_dropout=0.1"], "head_dropout is read by the patch and channel"),
    (["model=linear", "calendar=false"], "calendar is read by the transformer and patch "
                                         "models, not linear"),
    (["model=repeat", "revin=false"], "revin is read by the transformer, patch, channel, "
                                      "linear and sparse models, not repeat"),
    (["model=patch", "half_life=0"], "half_life is read by the repeat model, not patch"),
    (["model=channel", "residual_attention=false"], "residual_attention is read by the patch "
                                                   "model, not channel"),
    (["model=patch", "layers.tie_output=false"], "command line layers.tie_output=false: "
     "layers.tie_output is not read by forecasting (a translation setting); leave it out"),
    (["model=transformer", "max_len=10"], "max_len is not read by forecasting (its "
                                          "positions cover input_length + horizon)"),
])
def test_a_setting_the_model_does_not_read_is_one_line(tmp_path, capsys, settings, message):
    assert message in refused(tmp_path, capsys,
                              ["quantiles=", "max_epochs=1", "threads=1", *settings])


def test_settings_the_model_reads_and_shared_files_pass():
    patch = ForecastConfig(csv="x.csv", model="patch")
    assert patch.unread(["patch_len", "stride", "d_model", "layers.dropout", "head_dropout",
                         "lr", "input_length", "revin"]) == []
    # a YAML file's values are not given by name: a linear run from the patch config passes
    assert ForecastConfig(csv="x.csv", model="linear", patch_len=24).problems() == []
    assert [key for key, _ in ForecastConfig(model="transformer").unread(READ_BY)] == [
        key for key, readers in READ_BY.items() if "transformer" not in readers]


def test_fit_refuses_them_too(tmp_path):
    csv = write_sine(tmp_path / "sine.csv")
    with pytest.raises(UserError, match="settings: stride is read by the patch model, not "
                                        "linear"):
        Forecaster.fit(csv, tmp_path / "run", model="linear", stride=4, input_length=48,
                       horizon=12, quantiles=[], max_epochs=1, threads=1)
    assert not (tmp_path / "run").exists()

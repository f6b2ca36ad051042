"""What a forecaster attends to, with dates (`Forecaster.attention`, the explainer's view of
a forecasting run): the model's own last-layer weights, laid out on the series' calendar."""

import numpy as np
import pytest
import torch

from tests.helpers.forecasting import write_sine
from transduce.api.forecaster import Forecaster
from transduce.errors import UserError

SMALL = dict(input_length=48, horizon=12, d_model=16, d_ff=32, num_heads=2, max_epochs=1, threads=1)


@pytest.fixture(scope="module")
def sine(tmp_path_factory):
    return write_sine(tmp_path_factory.mktemp("sine") / "sine.csv", n=400)


def test_the_transformer_attends_from_each_forecast_step_to_dated_inputs(sine, tmp_path):
    model = Forecaster.fit(sine, tmp_path / "run", model="transformer", **SMALL)
    got = model.attention(sine)
    predicted = [row["date"] for row in model.predict(sine)]
    assert got["layout"] == "steps" and got["forecast_dates"] == predicted
    assert len(got["columns"]) == 48 and got["columns"][-1] == "2021-01-17 15:00:00"
    known = got["known_rows"]
    assert got["rows"] == got["columns"][48 - known :] + predicted
    weights = np.array(got["weights"])  # (heads, known + horizon, input steps)
    assert weights.shape == (2, known + 12, 48)
    np.testing.assert_allclose(weights.sum(-1), 1, atol=1e-3)
    # the model's own weights for that window
    series, _ = model._history(sine)
    ahead = model._window(series, "sine")
    x, _, x_time, _, _ = ahead.ends.batch([0])
    y_time = torch.from_numpy(ahead.features)
    with torch.no_grad():
        _, own = model.model(x, x_time, y_time, need_weights=True)
    np.testing.assert_allclose(weights, own[0].numpy(), atol=1e-4)


def test_the_patch_model_attends_over_dated_patches_per_channel(sine, tmp_path):
    model = Forecaster.fit(sine, tmp_path / "run", model="patch", patch_len=8, stride=4, **SMALL)
    got = model.attention(sine)
    assert got["layout"] == "patches" and got["channels"] == ["load", "temp"]
    n = (48 - 8) // 4 + 2
    assert len(got["rows"]) == n and got["rows"][0].startswith(got["input_dates"][0])
    weights = np.array(got["weights"])  # (channels, heads, patches, patches)
    assert weights.shape == (2, 2, n, n)
    np.testing.assert_allclose(weights.sum(-1), 1, atol=1e-3)


def test_a_model_without_attention_says_so(forecast_run):
    run, csv = forecast_run
    with pytest.raises(UserError, match="a linear model has no attention to show"):
        Forecaster(run).attention(csv)


def test_which_models_have_attention_is_said_by_their_configs():
    from transduce.tasks.forecasting.models import MODELS

    layouts = {name: model().attention() for name, model in MODELS.items()}
    assert layouts == {
        "transformer": "steps",
        "patch": "patches",
        "channel": "channels",
        "linear": None,
        "sparse": None,
        "repeat": None,
        "logsparse": None,
    }
    assert MODELS["channel"](mix_channels=False).attention() is None  # tokens see only themselves


def test_the_refusal_names_the_models_that_have_attention(forecast_run):
    run, csv = forecast_run
    with pytest.raises(UserError, match="the transformer, patch, channel models have"):
        Forecaster(run).attention(csv)

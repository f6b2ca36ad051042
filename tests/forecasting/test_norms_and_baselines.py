"""Instance normalisation (RevIN), the linear models and the repeat baseline."""

import dataclasses

import numpy as np
import pytest
import torch

from tests.helpers.forecasting import randomised
from transduce.nn.forecasting.norms import InstanceNorm
from transduce.tasks.forecasting.config import ForecastConfig, build_forecaster
from transduce.tasks.forecasting.evaluation import evaluate


@pytest.mark.parametrize("center", ["mean", "last"])
def test_instance_norm_round_trips(center):
    norm = randomised(InstanceNorm(channels=4, center=center))
    x = torch.randn(3, 20, 4) * 5 + 2
    z, stats = norm.normalise(x)
    torch.testing.assert_close(norm.denormalise(z, stats), x, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("center", ["mean", "last"])
def test_a_silent_head_forecasts_the_centre_revin_subtracted(center):
    """revin_center=last: a forecast of zero change repeats each channel's last value (the
    random-walk forecast); mean: it repeats the window's mean."""
    cfg = ForecastConfig.of(
        csv="x.csv", input_length=24, horizon=6, patch_len=8, stride=4, revin_center=center
    )
    cfg.validate("test")
    model = build_forecaster(cfg, channels=2).eval()
    with torch.no_grad():
        model.head[-1].weight.zero_()
        model.head[-1].bias.zero_()
        x = torch.randn(3, 24, 2) * 4 + 1
        y, _ = model(x)
    centre = x[:, -1:] if center == "last" else x.mean(1, keepdim=True)
    torch.testing.assert_close(y[..., 0], centre.expand(-1, 6, -1), atol=1e-5, rtol=1e-5)


def test_an_unknown_revin_center_is_refused():
    from transduce.errors import UserError

    with pytest.raises(UserError, match="revin_center must be one of mean, last, not 'median'"):
        ForecastConfig.of(csv="x.csv", revin_center="median").validate("run.yaml")


@pytest.mark.parametrize("half_life", [0.0, 2.5])
def test_repeat_baseline_mse_equals_a_hand_computation(tmp_path, half_life):
    """The last value, and with ``half_life`` h the last value pulled towards the training
    mean (0 on the z-scored scale): x · 0.5^(k / h) at step k."""
    from transduce.tasks.forecasting.data import load_forecast_data

    rng = np.random.default_rng(1)
    n, L, H = 60, 8, 4
    values = rng.normal(size=(n, 2)).cumsum(0)
    path = tmp_path / "walk.csv"
    path.write_text(
        "date,u,v\n"
        + "".join(
            f"2020-01-{1 + i // 24:02d} {i % 24:02d}:00:00,{a:.6f},{b:.6f}\n"
            for i, (a, b) in enumerate(values)
        )
    )
    cfg = ForecastConfig.of(
        csv=str(path), model="repeat", input_length=L, horizon=H, half_life=half_life
    )
    data = load_forecast_data(cfg)
    metrics = evaluate(build_forecaster(cfg, 2), data, "test", batch_size=3, drop_last=(4,))
    # By hand: z-scores from the first int(0.7 n) rows; windows of the last rows.
    stored = np.array([[float(f"{a:.6f}"), float(f"{b:.6f}")] for a, b in values])
    train = stored[: int(0.7 * n)]
    z = (stored - train.mean(0)) / train.std(0)
    start = n - int(0.2 * n) - L
    decay = 0.5 ** (np.arange(1, H + 1) / half_life)[:, None] if half_life else 1.0
    errors = [z[s + L : s + L + H] - z[s + L - 1] * decay for s in range(start, n - L - H + 1)]
    assert metrics["windows"] == len(errors)
    np.testing.assert_allclose(metrics["mse"], np.mean(np.square(errors)), rtol=1e-5)
    np.testing.assert_allclose(metrics["mae"], np.mean(np.abs(errors)), rtol=1e-5)
    # The reference code's scoring: its test loader drops the last incomplete batch of 4.
    kept = len(errors) // 4 * 4
    assert len(errors) % 4 and metrics["drop_last"][4]["windows"] == kept
    np.testing.assert_allclose(
        metrics["drop_last"][4]["mse"], np.mean(np.square(errors[:kept])), rtol=1e-5
    )


def test_a_linear_run_from_before_revin_was_honoured_still_loads(tmp_path, forecast_run):
    """Such a run's config says revin=true (the default) but its weights have none: it
    loads as trained, without instance normalisation."""
    from transduce import runs
    from transduce.tasks.forecasting.rundir import load_model

    run, _ = forecast_run
    state = runs.load_checkpoint(runs.checkpoint_dir(run) / runs.BEST, "forecast")
    assert state["config"]["model"]["revin"] and "revin.weight" in state["model"]
    old = {
        **state,
        "model": {k: v for k, v in state["model"].items() if not k.startswith("revin.")},
    }
    (tmp_path / "old" / "checkpoints").mkdir(parents=True)
    runs.save_checkpoint(tmp_path / "old" / "checkpoints" / runs.BEST, old)
    cfg, model, _, _ = load_model(tmp_path / "old")
    assert model.revin is None and cfg.model.revin is False
    x = torch.randn(2, 48, 2)
    plain = model.linear(x.transpose(1, 2)).transpose(1, 2)  # (B, H, C), no normalisation
    torch.testing.assert_close(model(x)[0][..., 0], plain)


@pytest.mark.parametrize("kernel", [1, 4, 5])
def test_the_moving_average_follows_a_ramp_and_repeats_the_ends(kernel):
    """Inside the window the mean of a straight line is the line; at the ends the window is
    extended with its first and last values, so a constant stays itself everywhere."""
    from transduce.nn.forecasting.linear import moving_average

    ramp = torch.arange(12.0).view(1, 12, 1).repeat(2, 1, 3)  # (B, L, C)
    trend = moving_average(ramp, kernel)
    assert trend.shape == ramp.shape
    before, after = (kernel - 1) // 2, kernel // 2
    inside = slice(before, 12 - after)
    torch.testing.assert_close(trend[:, inside], ramp[:, inside] + (after - before) / 2)
    first = torch.tensor([0.0] * before + [float(n) for n in range(kernel - before)]).mean()
    torch.testing.assert_close(trend[0, 0, 0], first)
    flat = torch.full((1, 9, 2), 3.0)
    torch.testing.assert_close(moving_average(flat, kernel), flat)


def test_a_decomposed_linear_forecast_reads_the_trend_through_its_own_map():
    """DLinear: with the map of the remainder silenced and the trend's map copying the last
    step, the forecast is the window's moving average at its last step."""
    model = build_forecaster(
        ForecastConfig.of(
            csv="x.csv", model="linear", input_length=8, horizon=3, revin=False, trend_kernel=5
        ),
        1,
    ).eval()
    with torch.no_grad():
        model.linear.weight.zero_()
        model.linear.bias.zero_()
        model.trend.weight.zero_()
        model.trend.weight[:, -1] = 1.0
        model.trend.bias.zero_()
    x = torch.tensor([1.0, 2, 3, 4, 5, 6, 10, 20]).view(1, 8, 1)
    y, _ = model(x)
    last = torch.tensor([6.0, 10, 20, 20, 20]).mean()  # two steps back, the end twice more
    torch.testing.assert_close(y[0, :, 0, 0], last.repeat(3))
    assert ForecastConfig.of(csv="x.csv", model="linear").model.trend_kernel == 0
    assert build_forecaster(ForecastConfig.of(csv="x.csv", model="linear"), 1).trend is None


@pytest.mark.parametrize(
    "model, extra",
    [
        ("transformer", {}),
        ("patch", {}),
        ("channel", {}),
        ("linear", {}),
        ("sparse", {"period": 4}),
        ("patch", {"members": 2}),
    ],
)
def test_revin_affine_false_leaves_every_model_s_normalisation_without_parameters(model, extra):
    """Each model takes the setting: its RevIN learns a scale and a shift per channel
    unless revin_affine=false, and then holds no parameters (nor checkpoint entries)."""
    cfg = ForecastConfig.of(csv="x.csv", model=model, input_length=16, horizon=8, **extra)
    norms = lambda m: [n for n in m.modules() if isinstance(n, InstanceNorm)]  # noqa: E731
    with_map = build_forecaster(cfg, 3)
    assert norms(with_map) and all(n.weight.shape == (3,) for n in norms(with_map))
    without = build_forecaster(
        dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, revin_affine=False)), 3
    )
    assert norms(without) and all(n.weight is None and n.bias is None for n in norms(without))
    assert not [k for k in without.state_dict() if "revin" in k]
    assert (
        sum(p.numel() for p in with_map.parameters()) - sum(p.numel() for p in without.parameters())
    ) == 6 * len(norms(with_map))

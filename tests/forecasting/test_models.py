"""The forecasting models: shapes, masks, affine changes, quantiles, dropout, residual
attention, calendars and what their configs say."""

import dataclasses

import pytest
import torch

from tests.helpers.forecasting import randomised
from transduce.nn.forecasting.patch import PatchForecaster
from transduce.nn.forecasting.transformer import SeriesTransformer
from transduce.tasks.forecasting.config import ForecastConfig, build_forecaster


@pytest.mark.parametrize("center", ["mean", "last"])
@pytest.mark.parametrize("norm", ["pre", "post", "batch"])
def test_patch_forecast_follows_an_affine_change_of_one_channel(norm, center):
    """Reversible normalisation: a·x + b in (one channel) gives a·ŷ + b out on that channel
    and leaves the others unchanged (channel independence)."""
    model = randomised(
        PatchForecaster(
            channels=3,
            input_length=48,
            horizon=12,
            patch_len=8,
            stride=4,
            d_model=16,
            num_heads=4,
            d_ff=32,
            num_layers=2,
            dropout=0.1,
            norm=norm,
            revin_center=center,
        )
    )
    x = torch.randn(2, 48, 3)
    changed = x.clone()
    changed[..., 1] = 3.5 * x[..., 1] - 7.0
    with torch.no_grad():
        y, _ = model(x)
        y_changed, _ = model(changed)
    assert y.shape == (2, 12, 3, 1)  # the point forecast only
    y, y_changed = y[..., 0], y_changed[..., 0]
    torch.testing.assert_close(y_changed[..., 1], 3.5 * y[..., 1] - 7.0, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(y_changed[..., [0, 2]], y[..., [0, 2]])
    assert not torch.allclose(y[..., 0], y[..., 1])  # the channels do differ


@pytest.mark.parametrize("model", ["patch", "transformer"])
def test_quantiles_never_cross_and_follow_an_affine_change(model):
    levels = (0.1, 0.5, 0.9)
    build = (
        PatchForecaster(
            channels=2,
            input_length=24,
            horizon=6,
            patch_len=8,
            stride=4,
            d_model=16,
            num_heads=4,
            d_ff=32,
            num_layers=1,
            dropout=0.1,
            quantiles=levels,
        )
        if model == "patch"
        else SeriesTransformer(
            channels=2,
            horizon=6,
            label_length=4,
            d_model=16,
            num_heads=2,
            d_ff=32,
            num_encoder_layers=1,
            num_decoder_layers=1,
            dropout=0.1,
            quantiles=levels,
        )
    )
    net = randomised(build)
    x, t = torch.randn(5, 24, 2), torch.rand(5, 30, 4)
    with torch.no_grad():
        y, _ = net(x, t[:, :24], t[:, 24:])
        moved, _ = net(2.0 * x + 3.0, t[:, :24], t[:, 24:])
    assert y.shape == (5, 6, 2, 4)
    assert (y[..., 1:].diff(dim=-1) >= 0).all()  # 0.1 ≤ 0.5 ≤ 0.9 everywhere
    torch.testing.assert_close(moved, 2.0 * y + 3.0, atol=1e-4, rtol=1e-4)


def test_series_transformer_shapes_and_causal_decoder():
    model = randomised(
        SeriesTransformer(
            channels=2,
            horizon=6,
            label_length=4,
            d_model=16,
            num_heads=2,
            d_ff=32,
            num_encoder_layers=1,
            num_decoder_layers=2,
            dropout=0.1,
            time_features=4,
        )
    )
    x, x_time, y_time = torch.randn(3, 24, 2), torch.rand(3, 24, 4), torch.rand(3, 6, 4)
    with torch.no_grad():
        y, weights = model(x, x_time, y_time, need_weights=True)
        later, _ = model(x, x_time, torch.cat([y_time[:, :3], torch.rand(3, 3, 4)], 1))
    assert y.shape == (3, 6, 2, 1) and weights.shape == (3, 2, 10, 24)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 2, 10))
    # Calendar features of later forecast steps do not change earlier forecasts (causal mask).
    torch.testing.assert_close(later[:, :3], y[:, :3])
    assert not torch.allclose(later[:, 3:], y[:, 3:])


def test_batch_norm_is_refused_for_the_encoder_decoder():
    from transduce.config import apply_overrides
    from transduce.errors import UserError

    with pytest.raises(UserError, match="norm=batch is for the patch model"):
        apply_overrides(
            ForecastConfig.of(csv="x.csv"), ["model=transformer", "norm=batch"]
        ).validate("run.yaml")
    apply_overrides(ForecastConfig.of(csv="x.csv"), ["model=patch", "norm=batch"]).validate(
        "run.yaml"
    )


@pytest.mark.parametrize("model", ["patch", "channel", "transformer"])
def test_the_attention_and_activation_dropouts_reach_every_layer(model):
    """Settings of the library's Transformer that forecasting reads must not be dropped on
    the way to the model."""
    from transduce.config import apply_overrides

    own = {"patch": ["patch_len=8", "stride=8"], "transformer": ["label_length=12"]}
    cfg = apply_overrides(
        ForecastConfig.of(csv="x.csv"),
        [
            f"model={model}",
            "input_length=48",
            "horizon=12",
            *own.get(model, []),
            "attention_dropout=0.3",
            "activation_dropout=0.2",
        ],
    )
    cfg.validate("run.yaml")
    forecaster = build_forecaster(cfg, channels=3)
    layers = list(forecaster.encoder.layers)
    if model == "transformer":
        layers += list(forecaster.decoder.layers)
    assert layers
    for layer in layers:
        assert layer.self_attn.dropout == 0.3
        assert layer.ffn.dropout.p == 0.2


def test_residual_attention_adds_the_previous_layers_scores():
    """Each layer's scores are its own QKᵀ/√d_h plus the layer below's; with no prior the
    layer computes what the library's encoder layer computes with the same weights."""
    import torch.nn.functional as F

    from transduce.nn.forecasting.patch import PATCH_RESIDUALS, ResidualAttentionLayer
    from transduce.nn.layers import EncoderLayer

    torch.manual_seed(0)
    args = dict(d_model=16, num_heads=4, d_ff=32, dropout=0.1, residual=PATCH_RESIDUALS["batch"])
    layer = randomised(ResidualAttentionLayer(**args))
    plain = EncoderLayer(**args)
    plain.load_state_dict(layer.state_dict())
    plain.eval()
    x = torch.randn(5, 7, 16)
    prior = torch.randn(5, 4, 7, 7)
    attn = layer.self_attn
    with torch.no_grad():
        out, scores = layer(x)
        torch.testing.assert_close(out, plain(x, None)[0])
        q, k, v = (attn.split_heads(p(x)) for p in (attn.q_proj, attn.k_proj, attn.v_proj))
        own = q @ k.transpose(-2, -1) / 2.0  # √(16 / 4)
        torch.testing.assert_close(scores, own)
        out, scores = layer(x, prior)
        torch.testing.assert_close(scores, own + prior)
        # the output attends with softmax(own + prior): SDPA adds a float mask to the scores
        expected = attn.out_proj(
            attn.merge_heads(F.scaled_dot_product_attention(q, k, v, attn_mask=prior))
        )
        torch.testing.assert_close(
            out,
            plain.residuals[1](
                plain.residuals[0](x, lambda h: (expected, None))[0], lambda h: (plain.ffn(h), None)
            )[0],
        )


def test_the_patch_model_passes_scores_from_layer_to_layer():
    """residual_attention=true: every layer after the first receives the one below's scores,
    and the forecast differs from the same weights without them."""
    cfg = ForecastConfig.of(
        csv="x.csv", input_length=48, horizon=12, patch_len=8, stride=8, residual_attention=True
    )
    cfg.validate("test")
    model = randomised(build_forecaster(cfg, channels=2))
    seen = []
    for layer in model.encoder.layers:
        layer.register_forward_hook(lambda m, args, out: seen.append((args[1], out[1])))
    x = torch.randn(3, 48, 2)
    with torch.no_grad():
        y, _ = model(x)
    assert [prior is None for prior, _ in seen] == [True, False, False]
    for (_, below), (prior, _) in zip(seen, seen[1:]):
        assert prior is below
    plain = build_forecaster(
        dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, residual_attention=False)),
        channels=2,
    )
    plain.load_state_dict(model.state_dict())  # the same weights, each layer on its own scores
    with torch.no_grad():
        assert not torch.allclose(plain.eval()(x)[0], y, atol=1e-3)


@pytest.mark.parametrize("on", [True, False])
def test_patch_calendar_makes_the_forecast_depend_on_the_horizon_dates(on):
    """patch_calendar=true: the horizon's calendar features reach the forecast; false (the
    default, so runs trained before the setting load as they were): they do not."""
    cfg = ForecastConfig.of(
        csv="x.csv", input_length=24, horizon=6, patch_len=8, stride=4, patch_calendar=on
    )
    cfg.validate("test")
    model = randomised(build_forecaster(cfg, channels=2))
    assert (model.future is not None) == on
    x, x_time = torch.randn(3, 24, 2), torch.rand(3, 24, 4) - 0.5
    y_time = torch.rand(3, 6, 4) - 0.5
    with torch.no_grad():
        y, _ = model(x, x_time, y_time)
        moved, _ = model(x, x_time, y_time.roll(1, dims=1))
    assert torch.allclose(y, moved) != on


def test_patches_cover_the_window_and_repeat_its_last_value_at_the_end():
    """PatchTST's patching: 10 steps in patches of 4 every 2 make (10 − 4) // 2 + 2 = 5
    patches, the last of them the final two steps and two repeats of the last one."""
    from transduce.nn.forecasting.patch import cut_patches

    ramp = torch.arange(10.0).view(1, 1, 10).repeat(2, 3, 1)  # (B, C, L)
    patches = cut_patches(ramp, patch_len=4, stride=2)
    assert patches.shape == (2, 3, 5, 4)
    torch.testing.assert_close(
        patches[0, 0],
        torch.tensor([[0.0, 1, 2, 3], [2, 3, 4, 5], [4, 5, 6, 7], [6, 7, 8, 9], [8, 9, 9, 9]]),
    )
    model = build_forecaster(
        ForecastConfig.of(
            csv="x.csv", model="patch", input_length=10, horizon=2, patch_len=4, stride=2
        ),
        1,
    )
    assert model.num_patches == patches.shape[2]


@pytest.mark.parametrize("name", ["transformer", "patch", "logsparse"])
def test_a_model_without_the_calendar_skips_its_columns_of_the_time_features(name):
    """calendar=false: the model reads the known covariates after the calendar's columns
    (their width is data.windows.CALENDAR_FEATURES) and nothing of the calendar."""
    from transduce.data.windows import CALENDAR_FEATURES
    from transduce.tasks.forecasting.models import MODELS

    extra = {"patch": {"patch_calendar": False}, "transformer": {"label_length": 12}}.get(name, {})
    config = MODELS[name](calendar=False, **extra)
    assert config.time_features(2) == {"time_features": 2, "skip_features": CALENDAR_FEATURES}
    assert MODELS[name]().time_features(2) == {
        "time_features": CALENDAR_FEATURES + 2,
        "skip_features": 0,
    }
    run = ForecastConfig.of(csv="x.csv", input_length=24, horizon=6, model=name)
    model = config.build(run, channels=1, inputs=0, known=2).eval()
    x = torch.randn(2, 24, 1)
    times = torch.rand(2, 30, CALENDAR_FEATURES + 2)
    with torch.no_grad():
        y, _ = model(x, times[:, :24], times[:, 24:])
        calendar_changed = times.clone()
        calendar_changed[..., :CALENDAR_FEATURES] = torch.rand(2, 30, CALENDAR_FEATURES)
        same, _ = model(x, calendar_changed[:, :24], calendar_changed[:, 24:])
        known_changed = times.clone()
        known_changed[..., CALENDAR_FEATURES:] += 1
        other, _ = model(x, known_changed[:, :24], known_changed[:, 24:])
    torch.testing.assert_close(same, y)
    assert not torch.allclose(other, y)


def test_which_models_mix_channels_is_said_by_their_configs():
    """As NeuralForecast marks its multivariate models: past-observed covariates need one."""
    from transduce.tasks.forecasting.models import MODELS

    mixing = {name for name, model in MODELS.items() if model().mixes_channels()}
    assert mixing == {"transformer", "channel"}
    assert not MODELS["channel"](mix_channels=False).mixes_channels()

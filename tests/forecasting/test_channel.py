"""The `channel` model: channel tokens embedded by a mixture of linear experts."""

from datetime import datetime, timedelta

import numpy as np
import pytest
import torch

from transduce.cli.main import main
from transduce.nn.forecasting.channel import ChannelForecaster, ChannelMask
from transduce.tasks.forecasting.rundir import load_run


def built(mix: bool, quantiles=(), targets=None, channels=3, learned_mask=False):
    torch.manual_seed(0)
    model = ChannelForecaster(
        channels=channels,
        input_length=40,
        horizon=6,
        d_model=16,
        num_heads=2,
        d_ff=32,
        num_layers=2,
        dropout=0.1,
        experts=3,
        trend_kernel=5,
        mix_channels=mix,
        quantiles=quantiles,
        targets=targets,
        learned_mask=learned_mask,
    )
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)
    return model.eval()


@pytest.mark.parametrize("mix, learned_mask", [(True, False), (False, False), (True, True)])
def test_an_affine_change_of_one_channel_moves_only_its_forecast(mix, learned_mask):
    """RevIN standardises each channel, so a·x + b on one channel leaves every token (and
    the learned mask, which reads the standardised windows) as it was: that channel's
    forecast becomes a·ŷ + b and the others do not move."""
    model = built(mix, learned_mask=learned_mask)
    x = torch.randn(4, 40, 3)
    changed = x.clone()
    changed[..., 1] = 2.5 * x[..., 1] + 4.0
    with torch.no_grad():
        y, _ = model(x)
        y_changed, _ = model(changed)
    assert y.shape == (4, 6, 3, 1)
    torch.testing.assert_close(y_changed[..., 1, 0], 2.5 * y[..., 1, 0] + 4.0, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(y_changed[..., [0, 2], :], y[..., [0, 2], :], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("mix", [True, False])
def test_channels_inform_each_other_only_when_mixed(mix):
    model = built(mix)
    x = torch.randn(4, 40, 3)
    changed = x.clone()
    changed[:, 20:, 1] = torch.randn(4, 20)  # a new shape for channel 1, not an affine map
    with torch.no_grad():
        y, _ = model(x)
        y_changed, _ = model(changed)
    others_moved = (y_changed[..., [0, 2], :] - y[..., [0, 2], :]).abs().max().item()
    assert not torch.allclose(y_changed[..., 1, :], y[..., 1, :])
    assert (others_moved > 1e-3) if mix else (others_moved == 0.0), others_moved


def spectra_at_distances():
    """Four channels whose windows' spectra differ only at one frequency: channel 1 is
    channel 0 plus a cosine of amplitude 1, channel 2 of amplitude 2, channel 3 of 4."""
    t = torch.arange(32.0)
    base = torch.sin(2 * torch.pi * 3 * t / 32)
    wave = torch.cos(2 * torch.pi * 5 * t / 32)
    return torch.stack([base, base + wave, base + 2 * wave, base + 4 * wave], -1)[None]


def test_the_channel_mask_keeps_a_channel_as_often_as_it_is_near():
    """|F| differs by 16 per unit of amplitude at frequency 5, so d_ij = (16·w_5·Δa)²; each
    channel keeps its nearest other channel (and itself) with probability 0.99, and one k
    times as far as that with 0.99/k²."""
    mask = ChannelMask(32)
    p = mask.probabilities(spectra_at_distances())[0]
    expected = (
        torch.tensor(
            [[1, 1, 1 / 4, 1 / 16], [1, 1, 1, 1 / 9], [1 / 4, 1, 1, 1 / 4], [1 / 4, 4 / 9, 1, 1]]
        )
        * 0.99
    )
    torch.testing.assert_close(p, expected)
    torch.manual_seed(0)
    samples = mask(spectra_at_distances().expand(4000, -1, -1))  # a sample per window
    assert set(samples.unique().tolist()) == {0.0, 1.0}
    torch.testing.assert_close(samples.mean(0), expected, atol=0.025, rtol=0)
    assert torch.equal(mask.eval()(spectra_at_distances())[0], expected > 0.5)


def test_the_channel_mask_learns_through_its_samples():
    """The sampled 0/1 gates carry a gradient to the frequency weights (straight-through),
    and the gates act in the encoder's attention."""
    torch.manual_seed(0)
    model = built(True, channels=4, learned_mask=True).train()
    x = torch.randn(8, 40, 4)
    model(x)[0].square().sum().backward()
    assert model.channel_mask.weight.grad.abs().sum() > 0
    gates = model.channel_mask(model.revin.normalise(x)[0])
    assert gates.requires_grad and not torch.all(gates == 1)


@pytest.mark.parametrize("mix, learned_mask", [(True, False), (False, False), (True, True)])
def test_the_attention_between_channels_is_returned_when_asked(mix, learned_mask):
    model = built(mix, channels=4, learned_mask=learned_mask)
    x = torch.randn(5, 40, 4)
    with torch.no_grad():
        y, weights = model(x, need_weights=True)
        y_alone, none = model(x)
    assert none is None and weights.shape == (5, 2, 4, 4)  # (B, heads, C, C), last layer
    torch.testing.assert_close(y, y_alone)
    torch.testing.assert_close(weights.sum(-1), torch.ones(5, 2, 4))
    if not mix:
        assert torch.equal(weights, torch.eye(4).expand(5, 2, 4, 4))
    elif learned_mask:  # each window's mask leaves out the channels far from a channel
        mask = model.channel_mask(model.revin.normalise(x)[0])  # (B, C, C)
        assert torch.all(weights.masked_select(~mask[:, None]) == 0)
    else:
        assert (weights > 0).all()


def test_quantiles_are_ordered_and_only_the_targets_are_forecast():
    model = built(True, quantiles=(0.1, 0.5, 0.9), targets=2, channels=4)
    with torch.no_grad():
        y, _ = model(torch.randn(5, 40, 4) * 3.0)
    assert y.shape == (5, 6, 2, 4)  # two targets of four channels; point + three quantiles
    assert (y[..., 1:].diff(dim=-1) >= 0).all()


def write_leading(path, n=1200, lead=8, seed=0):
    """y repeats the past-observed column a, ``lead`` hours later; b is noise."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=n + lead), rng.normal(size=n)
    start = datetime(2021, 1, 1)
    rows = [
        f"{start + timedelta(hours=i):%Y-%m-%d %H:%M:%S},{a[i]:.4f},{a[i + lead]:.4f},{b[i]:.4f}"
        for i in range(n)
    ]
    path.write_text("\n".join(["date,y,a,b"] + rows) + "\n")
    return path


TINY = [
    "model=channel",
    "input_length=24",
    "horizon=8",
    "d_model=32",
    "d_ff=64",
    "num_heads=2",
    "num_encoder_layers=1",
    "dropout=0.0",
    "experts=2",
    "lr=0.003",
    "batch_size=32",
    "max_epochs=8",
    "threads=1",
    "quantiles=",
]  # seed: 3


@pytest.mark.parametrize("mask", ["learned_mask=false", "learned_mask=true"])
def test_a_past_observed_covariate_reaches_the_forecast_through_channel_attention(
    tmp_path, capsys, mask, outcome
):
    """y at hour t + 8 is a at hour t: with a as an input every step of the 8-hour horizon
    is known from the window; without it y is noise. The learned mask keeps a for y: their
    windows, eight hours apart, share two thirds of their values and so most of their
    spectrum."""
    csv = write_leading(tmp_path / "leading.csv")
    scores = {}
    for name, extra in (("with", ["inputs=a,b", mask]), ("without", [])):
        run = tmp_path / name
        assert (
            main(
                [
                    "forecast",
                    "train",
                    f"csv={csv}",
                    "columns=y",
                    *extra,
                    *TINY,
                    *outcome.args(3),
                    "--run-dir",
                    str(run),
                ]
            )
            == 0
        )
        assert main(["forecast", "test", str(run)]) == 0
        scores[name] = float(capsys.readouterr().out.split("test mse ")[1].split()[0])
    # measured: ratio 0.05-0.08, y reads a 0.95-0.98 (benchmarks/outcomes/spread.md)
    outcome.check("ratio", scores["with"] / scores["without"])
    assert main(["forecast", "plot", str(tmp_path / "with")]) == 0  # channels read each other
    assert (tmp_path / "with" / "forecast_0_attention.png").stat().st_size > 5000
    # what the heatmap shows: y's token reads a's, and hardly its own or b's
    _, model, data = load_run(tmp_path / "with")
    windows = data.windows["test"]
    with torch.no_grad():
        _, weights = model(
            torch.stack([windows[i][0] for i in range(0, len(windows), 7)]), need_weights=True
        )
    y_reads = weights.mean((0, 1))[0]  # columns y, a, b
    outcome.check("y_reads_a", float(y_reads[1]))


@pytest.mark.parametrize(
    "items, message",
    [
        (["inputs=a", "mix_channels=false"], "set mix_channels=true or inputs="),
        (
            ["learned_mask=true", "mix_channels=false"],
            "learned_mask is for the channel model with mix_channels=true",
        ),
        (["known=b"], "known-future covariates are for the transformer, patch and logsparse"),
        (["experts=0"], "experts"),
        (["expert_init=zeros"], "expert_init"),
        (["experts=2", "top_k=3"], "top_k must be at least 0 and at most 2"),
    ],
)
def test_channel_settings_are_checked(tmp_path, capsys, items, message):
    csv = write_leading(tmp_path / "s.csv", n=200)
    assert (
        main(
            [
                "forecast",
                "train",
                f"csv={csv}",
                "columns=y",
                "model=channel",
                *items,
                "--run-dir",
                str(tmp_path / "r"),
            ]
        )
        == 2
    )
    assert message in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_a_channel_run_learns_a_sine_and_predicts_and_plots_with_its_band(
    tmp_path, capsys, outcome
):
    from tests.helpers.forecasting import write_sine

    csv = write_sine(tmp_path / "sine.csv")
    scores = {}
    for model in ("repeat", "channel"):
        run = tmp_path / model
        extra = (
            [
                "quantiles=0.1,0.9",
                "mix_channels=false",
                "d_model=16",
                "num_heads=2",
                "d_ff=32",
                "num_encoder_layers=1",
                "dropout=0.0",
            ]
            if model == "channel"
            else []
        )
        assert (
            main(
                [
                    "forecast",
                    "train",
                    f"csv={csv}",
                    f"model={model}",
                    "input_length=48",
                    "horizon=12",
                    "lr=0.003",
                    "batch_size=32",
                    "max_epochs=4",
                    "threads=1",
                    *extra,
                    *outcome.args(2021),
                    "--run-dir",
                    str(run),
                ]
            )
            == 0
        )
        assert main(["forecast", "test", str(run)]) == 0
        scores[model] = float(capsys.readouterr().out.split("test mse ")[1].split()[0])
    # measured 0.08-0.11 (benchmarks/outcomes/spread.md)
    outcome.check("ratio", scores["channel"] / scores["repeat"])
    run = tmp_path / "channel"
    assert main(["forecast", "predict", str(run), "--csv", str(csv)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "date,load,temp,load_q0.1,temp_q0.1,load_q0.9,temp_q0.9"
    assert len(lines) == 13
    for line in lines[1:]:
        v = [float(x) for x in line.split(",")[1:]]
        assert v[2] <= v[4] and v[3] <= v[5]
    assert main(["forecast", "plot", str(run), "--future", "--csv", str(csv)]) == 0
    assert (run / "forecast_future.png").stat().st_size > 5000
    assert main(["forecast", "plot", str(run)]) == 0
    assert (run / "forecast_0.png").exists()  # channels kept apart: no attention to draw
    assert not (run / "forecast_0_attention.png").exists()

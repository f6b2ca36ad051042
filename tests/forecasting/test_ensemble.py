"""Deep ensembles of forecasters (``members``: models/Ensemble and the forecast task)."""

import pytest
import torch

from tests.helpers.forecasting import write_sine
from transduce.cli.main import main
from transduce.config import apply_overrides
from transduce.errors import UserError
from transduce.nn.forecasting.ensemble import Ensemble
from transduce.tasks.forecasting.config import ForecastConfig, build_forecaster
from transduce.tasks.forecasting.rundir import load_model
from transduce.tasks.forecasting.task import ForecastTask
from transduce.training.distributed import Session


def config(model, **keys):
    own = {"patch": {"patch_len": 8, "stride": 4}, "transformer": {"label_length": 4}}
    cfg = ForecastConfig.of(
        csv="x.csv",
        model=model,
        input_length=24,
        horizon=6,
        quantiles=(0.1, 0.5, 0.9),
        members=3,
        **own.get(model, {}),
        **keys,
    )
    cfg.validate("test")
    return cfg


@pytest.mark.parametrize("model", ["patch", "transformer"])
def test_an_ensemble_forecasts_the_mean_of_members_that_differ(model):
    torch.manual_seed(0)
    net = build_forecaster(config(model), channels=2)
    assert isinstance(net, Ensemble) and len(net.members) == 3
    x, t = torch.randn(5, 24, 2), torch.rand(5, 30, 4)
    net.eval()
    with torch.no_grad():
        mean, weights = net(x, t[:, :24], t[:, 24:], need_weights=model == "transformer")
        each = [m(x, t[:, :24], t[:, 24:])[0] for m in net.members]
    assert mean.shape == (5, 6, 2, 4)
    assert not torch.allclose(each[0], each[1])  # different initial weights
    torch.testing.assert_close(mean, torch.stack(each).mean(0))
    assert (mean[..., 1:].diff(dim=-1) >= 0).all()  # quantiles still ordered
    if model == "transformer":
        assert weights.shape[0] == 5
    net.train()
    stacked, _ = net(x, t[:, :24], t[:, 24:])
    assert stacked.shape == (15, 6, 2, 4)  # every member's forecast, for its own loss


def test_each_member_learns_from_its_own_error(tmp_path):
    """The gradient reaching a member is that of its own loss (scaled by 1/M), not of the
    error of the mean, which would couple the members."""
    csv = write_sine(tmp_path / "sine.csv")
    cfg = apply_overrides(config("patch"), [f"csv={csv}", "dropout=0"])
    from transduce.tasks.forecasting.data import load_forecast_data

    task = ForecastTask(cfg, load_forecast_data(cfg), Session(0, 1, torch.device("cpu"), "fp32"))
    torch.manual_seed(0)
    net = task.build_model().train()
    batch = task.batches(0)[0]
    loss, units = task.loss(net, batch)
    loss.backward()
    ensemble_grad = net.members[1].embed.weight.grad.clone()
    net.zero_grad()
    alone = Ensemble([net.members[1]]).train()
    single, single_units = task.loss(alone, batch)
    single.backward()
    assert units == single_units
    torch.testing.assert_close(
        ensemble_grad, net.members[1].embed.weight.grad / 3, rtol=1e-4, atol=1e-6
    )


def test_members_is_checked():
    with pytest.raises(UserError, match="members must be at least 1"):
        apply_overrides(ForecastConfig.of(csv="x.csv"), ["members=0"]).validate("run.yaml")
    with pytest.raises(
        UserError,
        match="members is a setting of the transformer, patch, channel and logsparse models",
    ):
        apply_overrides(ForecastConfig.of(csv="x.csv"), ["model=linear", "members=2"]).validate(
            "run.yaml"
        )


def test_an_ensemble_run_trains_calibrates_tests_and_predicts(tmp_path, capsys):
    csv = write_sine(tmp_path / "sine.csv")
    run = tmp_path / "run"
    assert (
        main(
            [
                "forecast",
                "train",
                "configs/forecast_etth1_patch.yaml",
                f"csv={csv}",
                "input_length=48",
                "horizon=12",
                "members=2",
                "max_epochs=2",
                "threads=1",
                "--run-dir",
                str(run),
            ]
        )
        == 0
    )
    _, model, _, _ = load_model(run)
    assert len(model.model.members) == 2  # calibrated, around the ensemble
    assert main(["forecast", "test", str(run)]) == 0
    assert main(["forecast", "predict", str(run), "--csv", str(csv)]) == 0
    assert "load_q0.9" in capsys.readouterr().out

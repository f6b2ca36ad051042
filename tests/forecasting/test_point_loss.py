"""``point_loss``: what training minimises for the point forecast (squared or absolute error)."""

import numpy as np
import pytest
import torch
from torch import nn

from transduce.config import apply_overrides
from transduce.errors import UserError
from transduce.tasks.forecasting.config import ForecastConfig
from transduce.tasks.forecasting.data import load_forecast_data
from transduce.tasks.forecasting.task import ForecastTask
from transduce.training.distributed import Session


class Constant(nn.Module):
    """Forecasts one learnt value everywhere, whatever it reads."""

    def __init__(self):
        super().__init__()
        self.value = nn.Parameter(torch.zeros(()))

    def forward(self, x, x_time, y_time):
        return self.value.expand(x.shape[0], y_time.shape[1], x.shape[2], 1), None


def skewed_task(tmp_path, point_loss):
    """A series of exponential draws: its mean and median lie apart (1 and ln 2 before the
    scaler, about 0 and −0.3 after it)."""
    rng = np.random.default_rng(0)
    lines = ["date,load"] + [f"2021-01-{1 + i // 24:02d} {i % 24:02d}:00:00,{v:.5f}"
                             for i, v in enumerate(rng.exponential(size=720))]
    csv = tmp_path / "skewed.csv"
    csv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cfg = ForecastConfig.of(csv=str(csv), input_length=24, horizon=6, batch_size=64,
                         point_loss=point_loss)
    cfg.validate("test")
    return ForecastTask(cfg, load_forecast_data(cfg), Session(0, 1, torch.device("cpu"), "fp32"))


@pytest.mark.parametrize("point_loss", ["mse", "mae"])
def test_the_point_forecast_learns_the_mean_or_the_median(tmp_path, point_loss):
    task = skewed_task(tmp_path, point_loss)
    targets = torch.stack([window[1] for window in task.windows])
    mean, median = float(targets.mean()), float(targets.median())
    assert abs(mean - median) > 0.2
    model = Constant()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    for epoch in range(40):
        for batch in task.batches(epoch):
            optimizer.zero_grad()
            loss, units = task.loss(model, batch)
            (loss / units).backward()
            optimizer.step()
    learnt = model.value.item()
    assert learnt == pytest.approx(median if point_loss == "mae" else mean, abs=0.05)


def test_the_losses_by_hand(tmp_path):
    for point_loss, expected in [("mse", 4.0 + 1.0), ("mae", 2.0 + 1.0)]:
        task = skewed_task(tmp_path, point_loss)
        x, y, x_time, y_time = task.windows[0]
        model = Constant()
        with torch.no_grad():  # the forecast misses the first two targets by 2 and −1
            model.value.fill_(float(y[0, 0]) + 2)
        task.windows = [(x, torch.tensor([[float(y[0, 0])], [float(y[0, 0]) + 3]]
                                          + [[float(y[0, 0]) + 2]] * 4), x_time, y_time)]
        loss, units = task.loss(model, torch.tensor([0]))
        assert (loss.item(), units) == (pytest.approx(expected), 6)


def test_point_loss_is_checked():
    with pytest.raises(UserError, match="point_loss must be one of mse, mae, not 'huber'"):
        apply_overrides(ForecastConfig.of(csv="x.csv"), ["point_loss=huber"]).validate("run.yaml")

"""``point_loss``: what training minimises for the point forecast (squared or absolute error)."""

import pytest
import torch
from torch import nn

from tests.helpers.forecasting import skewed_task
from transduce.config import apply_overrides
from transduce.errors import UserError
from transduce.tasks.forecasting.config import ForecastConfig


class Constant(nn.Module):
    """Forecasts one learnt value everywhere, whatever it reads."""

    def __init__(self):
        super().__init__()
        self.value = nn.Parameter(torch.zeros(()))

    def forward(self, x, x_time, y_time):
        return self.value.expand(x.shape[0], y_time.shape[1], x.shape[2], 1), None


@pytest.mark.parametrize("point_loss", ["mse", "mae"])
def test_the_point_forecast_learns_the_mean_or_the_median(tmp_path, point_loss, outcome):
    task = skewed_task(tmp_path, point_loss, seed=outcome.seed(2021))
    targets = torch.stack([window[1] for window in task.windows])
    mean, median = float(targets.mean()), float(targets.median())
    assert abs(mean - median) > 0.2  # so that the error's bound tells one from the other
    model = Constant()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    with outcome.autocast():
        for epoch in range(40):
            for batch in task.batches(epoch):
                optimizer.zero_grad()
                loss, units = task.loss(model, batch)
                (loss / units).backward()
                optimizer.step()
    learnt = model.value.item()
    outcome.check("error", abs(learnt - (median if point_loss == "mae" else mean)))


def test_the_losses_by_hand(tmp_path):
    for point_loss, expected in [("mse", 4.0 + 1.0), ("mae", 2.0 + 1.0)]:
        task = skewed_task(tmp_path, point_loss)
        x, y, x_time, y_time = task.windows[0]
        model = Constant()
        with torch.no_grad():  # the forecast misses the first two targets by 2 and −1
            model.value.fill_(float(y[0, 0]) + 2)
        task.windows = [
            (
                x,
                torch.tensor([[float(y[0, 0])], [float(y[0, 0]) + 3]] + [[float(y[0, 0]) + 2]] * 4),
                x_time,
                y_time,
            )
        ]
        loss, units = task.loss(model, torch.tensor([0]))
        assert (loss.item(), units) == (pytest.approx(expected), 6)


def test_point_loss_is_checked():
    with pytest.raises(UserError, match="point_loss must be one of mse, mae, not 'huber'"):
        apply_overrides(ForecastConfig.of(csv="x.csv"), ["point_loss=huber"]).validate("run.yaml")

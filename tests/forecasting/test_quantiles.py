"""Probabilistic forecasts: the ρ-risk, pinball loss, and quantiles that are ordered and
calibrated after training."""

import json

import numpy as np
import pytest
import torch

from tests.helpers.forecasting import write_sine
from transduce.cli.main import main
from transduce.evaluation.quantiles import band_coverage, coverage, intervals, rho_risk
from transduce.nn.forecasting.quantiles import pinball


def test_rho_risk_equals_a_hand_computation():
    truth = np.array([[2.0, -1.0], [4.0, 0.5]])
    forecast = np.array([[1.0, -1.0], [5.0, 1.5]])
    # D_0.9: x > x̂ → 0.9·(x − x̂); x ≤ x̂ → −0.1·(x − x̂)
    # (2, 1): 0.9·1 = 0.9; (−1, −1): x ≤ x̂ → 0; (4, 5): 0.1·1 = 0.1; (0.5, 1.5): 0.1·1 = 0.1
    assert rho_risk(forecast, truth, 0.9) == pytest.approx(2 * 1.1 / 7.5)
    # D_0.5: half the absolute error, so R_0.5 = Σ|x − x̂| / Σ|x|
    assert rho_risk(forecast, truth, 0.5) == pytest.approx(3.0 / 7.5)


def test_pinball_loss_by_hand_and_its_minimiser_is_the_quantile():
    q, y = torch.tensor([[1.0, 2.0]]), torch.tensor([3.0])
    # levels 0.1 and 0.9 at 1 and 2 for y = 3: 0.1·2 + 0.9·1
    assert float(pinball(q, y, (0.1, 0.9))) == pytest.approx(0.2 + 0.9)
    sample = torch.randn(20000)
    grid = torch.linspace(-3, 3, 601)
    losses = [float(pinball(torch.full((20000, 1), float(g)), sample, (0.9,))) for g in grid]
    assert float(grid[int(np.argmin(losses))]) == pytest.approx(1.2816, abs=0.05)


def test_intervals_and_coverage():
    assert intervals([0.1, 0.5, 0.9]) == [(0, 2)]
    assert intervals([0.05, 0.1, 0.5, 0.9, 0.95]) == [(0, 4), (1, 3)]
    assert intervals([0.5, 0.9]) == []
    assert coverage(np.zeros(4), np.ones(4), np.array([0.5, 1.0, 1.5, -0.1])) == 0.5
    # quantiles (2 windows, H 2, C 1, Q 5): the outer band is [-2, 2], the inner [-1, 1]
    q = torch.tensor([-2.0, -1.0, 0.0, 1.0, 2.0]).expand(2, 2, 1, 5)
    y = torch.tensor([0.5, 1.5, -3.0, 2.0]).view(2, 2, 1)
    assert band_coverage(q, y, [0.05, 0.1, 0.5, 0.9, 0.95]) == {"0.05-0.95": 0.75, "0.1-0.9": 0.25}


def test_evaluate_counts_coverage_over_every_window_whatever_the_batches():
    """Coverage summed batch by batch (the last batch smaller) equals one count over all."""
    from transduce.data.windows import Windows
    from transduce.tasks.forecasting.evaluation import evaluate

    y = np.array(
        [[0.0, 3.0, 0.2], [0.0, 0.0, 0.0], [5.0, 5.0, 5.0], [0.1, -0.1, 0.9], [4.0, 4.0, 0.0]],
        np.float32,
    ).reshape(5, 3, 1)

    class Data:  # five windows of H 3, C 1, in batches of 2, 2 and 1; the scaler is the identity
        target_scaler = type("S", (), {"mean": np.zeros(1), "std": np.ones(1)})()
        windows = {  # a series each: four input steps of 0, then the truth
            "test": Windows(
                values=[np.concatenate([np.zeros((4, 1), np.float32), v]) for v in y],
                times=[np.zeros((7, 0), np.float32)] * 5,
                input_length=4,
                horizon=3,
                starts=[(s, 0) for s in range(5)],
            )
        }

    class Band(torch.nn.Module):  # point 0, band [-1, 1]
        def __init__(self):
            super().__init__()
            self.p = torch.nn.Parameter(torch.zeros(1))

        def forward(self, x, x_time, y_time):
            return torch.tensor([0.0, -1.0, 0.0, 1.0]).expand(len(x), 3, 1, 4), None

    result = evaluate(Band(), Data(), "test", batch_size=2, quantiles=(0.1, 0.5, 0.9))
    # inside: 2 + 3 + 0 + 3 + 1 of 15 (the mean of the batches' shares would be 0.556)
    assert result["coverage"]["0.1-0.9"] == pytest.approx(9 / 15)


def test_quantiles_after_training_on_a_noisy_sine_are_ordered_and_calibrated(
    tmp_path, capsys, outcome
):
    csv = write_sine(tmp_path / "sine.csv", n=1500, noise=0.3)
    run = tmp_path / "run"
    assert (
        main(
            [
                "forecast",
                "train",
                f"csv={csv}",
                "model=patch",
                "input_length=48",
                "horizon=12",
                "patch_len=8",
                "stride=4",
                "d_model=16",
                "d_ff=32",
                "quantiles=0.1,0.5,0.9",
                "lr=0.003",
                "batch_size=32",
                "max_epochs=6",
                "dropout=0.1",
                "threads=1",
                *outcome.args(2021),
                "--run-dir",
                str(run),
            ]
        )
        == 0
    )
    assert main(["forecast", "test", str(run)]) == 0
    out = capsys.readouterr().out
    assert "R0.5 " in out and "R0.9 " in out and "coverage 0.1-0.9 " in out
    result = json.loads((run / "test_results.json").read_text())
    outcome.check("coverage", result["coverage"]["0.1-0.9"])  # of a 0.1-0.9 band: 0.8
    risks = outcome.check(
        "rho_risk_0.9_0.5", [result["rho_risk"]["0.9"], result["rho_risk"]["0.5"]]
    )
    assert 0 < risks[0] < risks[1]
    # predict writes a column per quantile, ordered on every row
    assert main(["forecast", "predict", str(run), "--csv", str(csv)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "date,load,temp,load_q0.1,temp_q0.1,load_q0.5,temp_q0.5,load_q0.9,temp_q0.9"
    for line in lines[1:]:
        v = [float(x) for x in line.split(",")[1:]]
        assert v[2] <= v[4] <= v[6] and v[3] <= v[5] <= v[7]
    assert main(["forecast", "plot", str(run)]) == 0
    assert (run / "forecast_0.png").is_file()
    assert main(["forecast", "plot", str(run), "--future", "--csv", str(csv)]) == 0
    assert (run / "forecast_future.png").is_file()
    assert main(["forecast", "plot", str(run), "--csv", str(csv)]) == 2
    assert "--csv goes with --future" in capsys.readouterr().err
    # without --csv: after the CSV the run was trained on, said on stderr
    (run / "forecast_future.png").unlink()
    assert main(["forecast", "plot", str(run), "--future"]) == 0
    assert (run / "forecast_future.png").is_file()
    assert "the CSV the run was trained on" in capsys.readouterr().err
    assert main(["forecast", "predict", str(run)]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == lines  # the same rows as with --csv of that file
    assert (
        f"forecasting after the last row of {csv.resolve()}, the CSV the run was trained on" in err
    )

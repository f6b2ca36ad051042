"""Quantile bands calibrated on the validation split (tasks/forecasting/calibration.py)."""

import json

import pytest
import torch
from torch import nn

from tests.helpers.forecasting import write_sine
from transduce.cli.main import main
from transduce.tasks.forecasting.calibration import Calibrated, fit_shifts
from transduce.tasks.forecasting.config import ForecastConfig
from transduce.tasks.forecasting.data import load_forecast_data
from transduce.tasks.forecasting.evaluation import evaluate

LEVELS = (0.1, 0.5, 0.9)


class NoBand(nn.Module):
    """Every output repeats the last value: a 0.1-0.9 band of width zero."""

    def __init__(self, horizon):
        super().__init__()
        self.horizon = horizon

    def forward(self, x, x_time=None, y_time=None, need_weights=False):
        last = x[:, -1:].expand(-1, self.horizon, -1)  # (B, H, C)
        return last.unsqueeze(-1).expand(-1, -1, -1, 1 + len(LEVELS)), None


def test_a_band_of_width_zero_holds_its_nominal_share_once_calibrated(tmp_path):
    """Fitted on validation, the band holds 80% there and about 80% of the held-out test
    values of the same process; the point and the median do not move."""
    csv = write_sine(tmp_path / "noisy.csv", n=1500, noise=0.4)
    data = load_forecast_data(ForecastConfig.of(csv=str(csv), input_length=48, horizon=12))
    model = NoBand(12)
    assert evaluate(model, data, "test", quantiles=LEVELS)["coverage"]["0.1-0.9"] < 0.05
    shifts = fit_shifts(model, data, LEVELS)
    assert shifts.shape == (3, 12)
    assert (shifts[1] == 0).all() and (shifts[2] == -shifts[0]).all() and (shifts[2] > 0).all()
    calibrated = Calibrated(model, torch.from_numpy(shifts).float())
    assert evaluate(calibrated, data, "val", quantiles=LEVELS)["coverage"][
        "0.1-0.9"
    ] == pytest.approx(0.8, abs=0.01)
    test = evaluate(calibrated, data, "test", quantiles=LEVELS)
    assert 0.7 <= test["coverage"]["0.1-0.9"] <= 0.9
    x, y, x_time, y_time = next(iter(data.loader("test", 8)))
    raw, _ = model(x)
    moved, _ = calibrated(x)
    torch.testing.assert_close(moved[..., :1], raw[..., :1])  # the point forecast
    torch.testing.assert_close(moved[..., 2], raw[..., 2])  # the median
    assert (moved[..., 1] < raw[..., 1]).all() and (moved[..., 3] > raw[..., 3]).all()


def train(tmp_path, *settings):
    csv = write_sine(tmp_path / "sine.csv", n=900, noise=0.3)
    run = tmp_path / "run"
    argv = [
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
        "dropout=0.1",
        "threads=1",
        *settings,
        "--run-dir",
        str(run),
    ]
    assert main(argv) == 0
    return csv, run, argv


def test_training_calibrates_and_every_loader_applies_it_to_its_checkpoint(tmp_path, capsys):
    csv, run, argv = train(tmp_path, "max_epochs=2", "patience=0")
    record = json.loads((run / "calibration.json").read_text())
    assert record["levels"] == list(LEVELS) and len(record["shifts"]) == 3
    assert record["coverage_after"]["0.1-0.9"] == pytest.approx(0.8, abs=0.02)
    assert "validation 0.1-0.9 band held" in capsys.readouterr().err
    assert main(["forecast", "test", str(run)]) == 0
    assert "quantiles (calibrated on validation)" in capsys.readouterr().out
    result = json.loads((run / "test_results.json").read_text())
    assert result["calibrated"] and "coverage" in result["uncalibrated"]
    assert result["coverage"] != result["uncalibrated"]["coverage"]
    # predict applies it: its band differs from the trained model's
    assert main(["forecast", "predict", str(run), "--csv", str(csv)]) == 0
    calibrated_rows = capsys.readouterr().out
    shifted = record | {"step": -5}  # fitted to another checkpoint: ignored, with a warning
    (run / "calibration.json").write_text(json.dumps(shifted))
    assert main(["forecast", "predict", str(run), "--csv", str(csv)]) == 0
    captured = capsys.readouterr()
    assert "was fitted to step -5, not to the best checkpoint" in captured.err
    assert captured.out != calibrated_rows
    # forecast calibrate fits it again to the best checkpoint
    assert main(["forecast", "calibrate", str(run)]) == 0
    assert "calibrated (" in capsys.readouterr().out
    assert main(["forecast", "predict", str(run), "--csv", str(csv)]) == 0
    assert capsys.readouterr().out == calibrated_rows
    (run / "calibration.json").write_text("{not json")
    assert main(["forecast", "test", str(run)]) == 2
    assert "calibration.json: not a calibration transduce wrote" in capsys.readouterr().err


def test_calibrate_false_writes_none_and_a_run_without_a_band_is_refused(tmp_path, capsys):
    _, run, argv = train(tmp_path, "max_epochs=1", "calibrate=false")
    assert not (run / "calibration.json").exists()
    # calibrate may change on resume (it acts once training ends): now it calibrates
    assert main([a if a != "calibrate=false" else "calibrate=true" for a in argv]) == 0
    assert (run / "calibration.json").exists()
    (run / "calibration.json").unlink()
    assert main(["forecast", "test", str(run)]) == 0
    assert "calibrated" not in capsys.readouterr().out
    assert json.loads((run / "test_results.json").read_text())["calibrated"] is False
    point = tmp_path / "point"
    csv = tmp_path / "sine.csv"
    assert (
        main(
            [
                "forecast",
                "train",
                f"csv={csv}",
                "model=linear",
                "input_length=48",
                "horizon=12",
                "max_epochs=1",
                "threads=1",
                "--run-dir",
                str(point),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["forecast", "calibrate", str(point)]) == 2
    assert "bound no central band" in capsys.readouterr().err
    assert not (point / "calibration.json").exists()

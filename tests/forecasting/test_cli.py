import json
import math
from datetime import datetime, timedelta

import pytest
import torch

from tests.helpers.forecasting import SINE_YAML as TINY
from tests.helpers.forecasting import refused, write_sine
from transduce.cli.main import main
from transduce.runs import load_checkpoint, step_checkpoints


@pytest.fixture
def sine(tmp_path):
    csv = write_sine(tmp_path / "sine.csv")
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY.format(csv=csv), encoding="utf-8")
    return config


def test_patch_model_learns_a_noisy_sine_well_below_repeating(sine, tmp_path, capsys, outcome):
    scores = {}
    for model in ("repeat", "patch"):
        run = tmp_path / model
        assert (
            main(
                [
                    "forecast",
                    "train",
                    str(sine),
                    f"model={model}",
                    *outcome.args(2021),
                    "--run-dir",
                    str(run),
                ]
            )
            == 0
        )
        assert main(["forecast", "test", str(run)]) == 0
        scores[model] = json.loads((run / "test_results.json").read_text())["mse"]
    assert "test mse" in capsys.readouterr().out
    # measured 0.032-0.036 (benchmarks/outcomes/spread.md)
    outcome.check("ratio", scores["patch"] / scores["repeat"])


def test_resumed_training_equals_an_uninterrupted_run(sine, tmp_path):
    whole, split = tmp_path / "whole", tmp_path / "split"
    settings = ["model=transformer", "dropout=0.1", "lr_decay=0.7", "lr_decay_after=1"]
    assert main(["forecast", "train", str(sine), *settings, "--run-dir", str(whole)]) == 0
    assert (
        main(["forecast", "train", str(sine), *settings, "max_epochs=2", "--run-dir", str(split)])
        == 0
    )
    assert main(["forecast", "train", str(sine), *settings, "--run-dir", str(split)]) == 0
    a = load_checkpoint(step_checkpoints(whole)[-1])
    b = load_checkpoint(step_checkpoints(split)[-1])
    assert a["epoch"] == b["epoch"] == 4
    for key in a["model"]:
        torch.testing.assert_close(a["model"][key], b["model"][key], rtol=0, atol=0)


def test_lr_decay_multiplies_the_rate_after_each_epoch_past_lr_decay_after(sine, tmp_path):
    run = tmp_path / "decay"
    assert (
        main(
            [
                "forecast",
                "train",
                str(sine),
                "lr_decay=0.5",
                "lr_decay_after=2",
                "keep_last=10",
                "--run-dir",
                str(run),
            ]
        )
        == 0
    )
    # a checkpoint holds the rate of the next update: epochs 1-2 at 0.003, then halved
    rates = {
        (c := load_checkpoint(path))["epoch"]: c["optimizer"]["param_groups"][0]["lr"]
        for path in step_checkpoints(run)
    }
    assert rates == pytest.approx({1: 0.003, 2: 0.0015, 3: 0.00075, 4: 0.000375})


def test_predict_and_plot(sine, tmp_path, capsys):
    run = tmp_path / "run"
    assert (
        main(
            [
                "forecast",
                "train",
                str(sine),
                "model=transformer",
                "max_epochs=1",
                "--run-dir",
                str(run),
            ]
        )
        == 0
    )
    capsys.readouterr()
    recent = write_sine(tmp_path / "recent.csv", n=60, seed=1)
    assert main(["forecast", "predict", str(run), "--csv", str(recent)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "date,load,temp" and len(lines) == 1 + 12
    assert lines[1].startswith("2021-01-03 12:00:00,")  # the hour after the last row (59)
    assert all(abs(float(v)) < 10 for line in lines[1:] for v in line.split(",")[1:])
    assert main(["forecast", "plot", str(run), "--window", "3"]) == 0
    assert (run / "forecast_3.png").stat().st_size > 5000
    assert (run / "forecast_3_attention.png").stat().st_size > 5000
    assert main(["forecast", "plot", str(run), "--window", "100000"]) == 2
    capsys.readouterr()
    for output in (tmp_path, run / "checkpoints" / "best.pt" / "x.csv"):  # checked first
        assert main(["forecast", "predict", str(tmp_path / "rnu"), "--output", str(output)]) == 2
        err = capsys.readouterr().err
        assert "give --output a file name" in err or "is a file where --output needs" in err
    for command in ("test", "predict", "plot", "calibrate"):  # a mistyped run directory
        assert main(["forecast", command, str(tmp_path / "rnu")]) == 2
        assert capsys.readouterr().err == (
            f"transduce: error: {tmp_path / 'rnu'}: no such "
            "run directory; give one that forecast train "
            "--run-dir (or forecast blend --output) wrote\n"
        )


def test_patch_calendar_reads_the_dates_of_the_forecast(sine, tmp_path, capsys):
    run = tmp_path / "run"
    assert (
        main(
            [
                "forecast",
                "train",
                str(sine),
                "patch_calendar=true",
                "max_epochs=1",
                "--run-dir",
                str(run),
            ]
        )
        == 0
    )
    capsys.readouterr()
    forecasts = []
    for name, start in (("recent", datetime(2021, 1, 1)), ("later", datetime(2021, 6, 3, 5))):
        rows = write_sine(tmp_path / f"{name}.csv", n=60, seed=1).read_text().splitlines()
        moved = [rows[0]] + [
            f"{start + timedelta(hours=i):%Y-%m-%d %H:%M:%S}," + row.split(",", 1)[1]
            for i, row in enumerate(rows[1:])
        ]
        (tmp_path / f"{name}.csv").write_text("\n".join(moved) + "\n")
        assert main(["forecast", "predict", str(run), "--csv", str(tmp_path / f"{name}.csv")]) == 0
        lines = capsys.readouterr().out.strip().splitlines()[1:]
        assert len(lines) == 12
        forecasts.append([line.split(",", 1)[1] for line in lines])
    assert forecasts[0] != forecasts[1]  # the same values, other dates: another forecast


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda rows: rows[:5] + ["2021-01-01 05:00:00,,1"] + rows[6:],
            "sine.csv:7: column 'load'",
        ),
        (lambda rows: rows[:5] + ["2021-01-01 05:00:00,abc,1"] + rows[6:], "holds 'abc'"),
        (lambda rows: rows[:6] + [rows[4]] + rows[6:], "sine.csv:8: date 2021-01-01 04:00:00 does"),
        (lambda rows: rows[:5] + rows[6:], "sine.csv:7: date 2021-01-01 06:00:00 follows 2021-01"),
        (
            lambda rows: rows[:5] + [rows[4].replace(",", ",1", 1)] + rows[6:],
            "sine.csv:7: date 2021-01-01 04:00:00 repeats the previous row's with other values",
        ),
        (lambda rows: rows[:40], "needs at least 104 rows"),
    ],
)
def test_bad_csv_gets_one_line_and_writes_nothing(sine, tmp_path, capsys, edit, message):
    csv = tmp_path / "sine.csv"
    lines = csv.read_text().splitlines()
    csv.write_text("\n".join(lines[:1] + edit(lines[1:])) + "\n")
    assert main(["forecast", "train", str(sine), "--run-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "run").exists()


def test_a_rows_split_reads_no_row_after_its_test_split(tmp_path, capsys):
    """A backtest: train, validation and test moved before the end of the file; the rows
    after the test split (here absurd values) change nothing."""
    csv = write_sine(tmp_path / "sine.csv")
    lines = csv.read_text().splitlines()
    wild = tmp_path / "wild.csv"  # rows 500.. replaced by huge values
    wild.write_text(
        "\n".join(lines[:501] + [line.split(",")[0] + ",1e9,-1e9" for line in lines[501:]]) + "\n"
    )
    results = []
    for name, path in (("sine", csv), ("wild", wild)):
        run = tmp_path / name
        assert (
            main(
                [
                    "forecast",
                    "train",
                    f"csv={path}",
                    "input_length=48",
                    "horizon=12",
                    "model=linear",
                    "max_epochs=2",
                    "threads=1",
                    "split=rows:300,400,500",
                    "--run-dir",
                    str(run),
                ]
            )
            == 0
        )
        assert main(["forecast", "test", str(run)]) == 0
        results.append(json.loads((run / "test_results.json").read_text()))
    assert results[0]["windows"] == 500 - 400 - 12 + 1
    assert math.isfinite(results[0]["mse"]) and results[0]["mse"] == results[1]["mse"]
    capsys.readouterr()
    assert "lower C to at most 600" in refused(tmp_path, capsys, ["split=rows:300,400,601"])
    assert "no val window" in refused(tmp_path, capsys, ["split=rows:300,305,500"])


def test_unknown_column_and_key(sine, tmp_path, capsys):
    assert (
        main(
            [
                "forecast",
                "train",
                str(sine),
                "columns=load,wind",
                "--run-dir",
                str(tmp_path / "run"),
            ]
        )
        == 2
    )
    assert "no column 'wind'; columns are load, temp" in capsys.readouterr().err
    assert (
        main(["forecast", "train", str(sine), "horizn=3", "--run-dir", str(tmp_path / "run")]) == 2
    )
    assert "unknown config key 'horizn'" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_a_training_split_that_fits_one_batch_is_warned_of(sine, tmp_path, capsys):
    # the sine's 420 training rows make 361 windows of 48 + 12 steps
    def warning(batch_size: int) -> list[str]:
        run = tmp_path / f"b{batch_size}"
        assert (
            main(
                [
                    "forecast",
                    "train",
                    str(sine),
                    "model=linear",
                    "max_epochs=1",
                    f"batch_size={batch_size}",
                    "--run-dir",
                    str(run),
                ]
            )
            == 0
        )
        lines = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
        assert lines == [
            line.split(" ", 2)[2]
            for line in (run / "train.log").read_text().splitlines()
            if "warning" in line
        ]
        return lines

    (line,) = warning(361)
    assert line == (
        f"transduce: warning: {tmp_path / 'sine.csv'}: its 361 training windows "
        "make a single update per epoch (batch_size=361); give a smaller "
        "batch_size (batch_size=32 makes 12 batches) or more epochs"
    )
    assert warning(360) == []  # two batches


@pytest.mark.parametrize("value", ["1e308", "-1e39"])
def test_a_value_beyond_float32_is_refused_with_its_line(forecast_run, tmp_path, capsys, value):
    """Read as float32 it would be inf, and every forecast nan (predict) or the loss nan at
    the first step (train): both refuse it by line, train leaving no run directory."""
    _, csv = forecast_run
    lines = csv.read_text(encoding="utf-8").splitlines()
    date, load, temp = lines[101].split(",")
    lines[101] = f"{date},{value},{temp}"
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["forecast", "predict", str(forecast_run[0]), "--csv", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{bad}:102: column 'load' holds {value}, beyond" in err[0], err
    run = tmp_path / "run"
    assert (
        main(
            [
                "forecast",
                "train",
                f"csv={bad}",
                "input_length=48",
                "horizon=12",
                "model=linear",
                "max_epochs=1",
                "--run-dir",
                str(run),
            ]
        )
        == 2
    )
    assert f"{bad}:102: column 'load' holds {value}" in capsys.readouterr().err
    assert not run.exists()


def test_a_file_of_dates_alone_is_named_so(forecast_run, tmp_path, capsys):
    """It was "no column 'load'; columns are " (an empty list) from predict and "every column
    is a covariate" from train, though none was named."""
    dates = tmp_path / "dates.csv"
    dates.write_text("date\n2021-01-01 00:00:00\n2021-01-01 01:00:00\n", encoding="utf-8")
    expected = f"{dates}: only a date column ('date'); add the columns of values to forecast"
    capsys.readouterr()
    assert main(["forecast", "predict", str(forecast_run[0]), "--csv", str(dates)]) == 2
    assert capsys.readouterr().err.strip() == f"transduce: error: {expected}"
    assert main(["forecast", "train", f"csv={dates}", "--run-dir", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.strip() == f"transduce: error: {expected}"
    assert not (tmp_path / "r").exists()

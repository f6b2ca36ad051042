"""Covariates: forecast columns apart from past-observed inputs and known-future inputs."""

from datetime import timedelta

import pytest

from tests.helpers.forecasting import SHIFTED_SETTINGS as TINY
from tests.helpers.forecasting import START, refused, write_shifted
from transduce.api.forecaster import Forecaster
from transduce.cli.main import main
from transduce.tasks.forecasting.calibration import Calibrated

PATCH = ["model=patch", "patch_len=8", "stride=4", "norm=pre"]
# TINY without what only the encoder–decoder reads (the patch model refuses it)
SHARED = [s for s in TINY if not s.startswith(("label_length", "num_decoder_layers"))]


@pytest.mark.parametrize("model", ["transformer", "patch"])
def test_a_known_future_covariate_is_used(tmp_path, capsys, model, outcome):
    csv, _ = write_shifted(tmp_path / "shifted.csv")
    scores = {}
    for name, extra in (("with", ["known=k"]), ("without", [])):
        run = tmp_path / name
        settings = SHARED + PATCH if model == "patch" else TINY
        assert (
            main(
                [
                    "forecast",
                    "train",
                    f"csv={csv}",
                    "columns=y",
                    *extra,
                    *settings,
                    *outcome.args(3),
                    "--run-dir",
                    str(run),
                ]
            )
            == 0
        )
        assert main(["forecast", "test", str(run)]) == 0
        scores[name] = float(capsys.readouterr().out.split("test mse ")[1].split()[0])
    # k makes y predictable; measured: transformer 0.05-0.10, patch 0.19-0.23
    # (benchmarks/outcomes/spread.md)
    outcome.check("ratio", scores["with"] / scores["without"])


def test_one_target_from_several_inputs_and_the_future_rows_of_known(tmp_path, capsys):
    csv, _ = write_shifted(tmp_path / "shifted.csv", n=600)
    run = tmp_path / "run"
    assert (
        main(
            [
                "forecast",
                "train",
                f"csv={csv}",
                "columns=y",
                "inputs=a,b",
                "known=k",
                "quantiles=0.1,0.9",
                *TINY[:-2],
                "max_epochs=1",
                "--run-dir",
                str(run),
            ]
        )
        == 0
    )
    capsys.readouterr()
    model = Forecaster(run)
    assert isinstance(model.model, Calibrated)  # its 0.1-0.9 band fitted to validation
    assert model.targets == ["y"] and model.model.model.project.out_features == 1 * 3
    lines = csv.read_text().splitlines()
    future = [
        f"{START + timedelta(hours=600 + h):%Y-%m-%d %H:%M:%S},,,,{0.1 * h:.4f}" for h in range(8)
    ]
    with_future = tmp_path / "with_future.csv"
    with_future.write_text("\n".join(lines + future) + "\n")
    assert main(["forecast", "predict", str(run), "--csv", str(with_future)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "date,y,y_q0.1,y_q0.9" and len(out) == 9
    assert out[1].startswith("2021-01-26 00:00:00,")  # the first blank row's date
    # without its future rows the known covariate is missing: one line naming the file, from
    # predict and from the plot of the future alike
    for command in (["predict", str(run)], ["plot", str(run), "--future"]):
        assert main(["forecast", *command, "--csv", str(csv)]) == 2
        assert (
            f"{csv}: 0 rows after the last observed one give the known covariates (k)"
            in capsys.readouterr().err
        )
    gap = tmp_path / "gap.csv"
    gap.write_text(
        "\n".join(lines[:300] + [lines[300].split(",")[0] + ",,,,0.1"] + lines[301:] + future)
        + "\n"
    )
    assert main(["forecast", "predict", str(run), "--csv", str(gap)]) == 2
    assert (
        f"{gap}:301: y, a, b are blank, but later rows have values; only the last rows"
        in capsys.readouterr().err
    )
    fields = lines[300].split(",")
    one = tmp_path / "one.csv"  # the message names what is blank in that row
    one.write_text(
        "\n".join(lines[:300] + [",".join(fields[:2] + ["", *fields[3:]])] + lines[301:] + future)
        + "\n"
    )
    assert main(["forecast", "predict", str(run), "--csv", str(one)]) == 2
    assert f"{one}:301: a is blank, but later rows have values" in capsys.readouterr().err


@pytest.mark.parametrize(
    "items, message",
    [
        (
            ["model=patch", "inputs=a"],
            "past-observed covariates (inputs) are for the models that mix channels "
            "(transformer, channel), not patch",
        ),
        (
            ["model=linear", "known=k"],
            "known-future covariates are for the transformer, patch and logsparse",
        ),
        (["model=transformer", "columns=y", "inputs=y"], "a column is named twice"),
        (
            ["model=transformer", "patch_calendar=true"],
            "patch_calendar is a setting of the patch model",
        ),
        (["model=patch", "calendar=false", "patch_calendar=true"], "with calendar=true"),
        (
            ["model=channel", "residual_attention=true"],
            "residual_attention is a setting of the patch model",
        ),
    ],
)
def test_covariate_settings_are_checked(tmp_path, capsys, items, message):
    csv, _ = write_shifted(tmp_path / "s.csv", n=200)
    assert main(["forecast", "train", f"csv={csv}", *items, "--run-dir", str(tmp_path / "r")]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "settings", [["inputs=load,temp"], ["known=load,temp"], ["inputs=load", "known=temp"]]
)
def test_covariates_that_leave_no_column_to_forecast_are_refused(tmp_path, capsys, settings):
    """Every column an input or known: one line naming the file, and no run directory (the
    windows would otherwise forecast every column, covariates too, or crash)."""
    error = refused(tmp_path, capsys, ["model=transformer", "label_length=12", *settings])
    assert "sine.csv: every column is a covariate" in error and "columns=NAME" in error, error

"""The forecasting Python API: fit on a CSV or a DataFrame, predict, plot."""

import io
import json
import math

import pandas as pd
import pytest

import transduce
from tests.helpers.forecasting import write_sine
from transduce.api.forecaster import Forecaster
from transduce.errors import UserError

TINY = dict(
    model="patch",
    input_length=48,
    horizon=12,
    patch_len=8,
    stride=4,
    d_model=16,
    d_ff=32,
    quantiles=[0.1, 0.5, 0.9],
    max_epochs=1,
    threads=1,
)


def test_fit_predict_plot_on_a_csv(tmp_path, monkeypatch):
    import transduce.api.forecaster as viz  # where the forecaster calls plot_forecast

    titles, draw = [], viz.plot_forecast
    monkeypatch.setattr(viz, "plot_forecast", lambda *a, **k: (titles.append(a[5]), draw(*a, **k)))
    csv = write_sine(tmp_path / "sine.csv", n=400)
    model = Forecaster.fit(csv, tmp_path / "run", **TINY)
    rows = model.predict(csv)
    assert len(rows) == 12 and rows[0]["date"] == "2021-01-17 16:00:00"  # the hour after
    assert set(rows[0]) == {
        "date",
        "load",
        "temp",
        "load_q0.1",
        "temp_q0.1",
        "load_q0.5",
        "temp_q0.5",
        "load_q0.9",
        "temp_q0.9",
    }
    assert model.plot(csv, tmp_path / "future.png").stat().st_size > 10_000
    assert model.predict() == rows  # by default after the CSV it was trained on
    assert model.plot() == tmp_path / "run" / "forecast_future.png"
    assert model.plot().stat().st_size > 10_000
    assert set(titles) == {"patch · the 12 hours after the last row"}  # by the calendar
    again = transduce.load(tmp_path / "run")  # the same run, loaded
    assert again.predict(csv) == rows
    assert repr(again) == (
        f"Forecaster({str(tmp_path / 'run')!r}: patch; forecasts load, "
        "temp; 12 steps from the last 48; quantiles 0.1, 0.5, 0.9)"
    )
    scores = model.test()  # what `forecast test` prints and writes
    assert scores == json.loads((tmp_path / "run" / "test_results.json").read_text())
    assert scores["windows"] == 400 - 320 - 12 + 1 and 0 < scores["mse"] < 10
    assert all(type(r) is float for r in scores["rho_risk"].values())  # prints as numbers


def test_the_last_value_pulled_towards_the_training_mean(tmp_path):
    """repeat with half_life h: step k of the forecast is m + (x − m)·0.5^(k / h), x the
    last value and m the mean of the training rows (the first 70% of a plain CSV)."""
    csv = write_sine(tmp_path / "sine.csv", n=400)
    model = Forecaster.fit(
        csv, tmp_path / "run", model="repeat", half_life=6.0, input_length=48, horizon=12, threads=1
    )
    assert repr(model).endswith(
        ": repeat, pulled towards the training mean with "
        "half-life 6; forecasts load, temp; 12 steps from the last 48)"
    )
    table = [line.split(",") for line in csv.read_text().splitlines()[1:]]
    rows = model.predict(csv)
    for j, name in enumerate(("load", "temp"), start=1):
        values = [float(row[j]) for row in table]
        mean, last = sum(values[:280]) / 280, values[-1]
        assert [r[name] for r in rows] == pytest.approx(
            [mean + (last - mean) * 0.5 ** (k / 6) for k in range(1, 13)], abs=1e-4
        )


def dataframe(text: str, dated: bool = False) -> pd.DataFrame:
    """A pandas DataFrame of a CSV's text: with ``dated``, its first column becomes an
    unnamed DatetimeIndex (as ``pd.date_range`` makes one); else pandas' row numbers."""
    if not dated:
        return pd.read_csv(io.StringIO(text))
    table = pd.read_csv(io.StringIO(text), index_col=0, parse_dates=True)
    table.index.name = None
    return table


def test_an_unnamed_index_of_dates_is_the_date_column(tmp_path):
    text = write_sine(tmp_path / "sine.csv", n=400).read_text()
    frame = dataframe(text, dated=True)
    model = Forecaster.fit(frame, tmp_path / "run", date_column="stamp", **TINY)
    assert (tmp_path / "run" / "series.csv").read_text().startswith("stamp,load,temp")
    assert model.predict(frame)[0]["stamp"] == "2021-01-17 16:00:00"


def test_a_start_that_fails_leaves_no_folder_for_the_frame(tmp_path):
    text = write_sine(tmp_path / "sine.csv", n=400).read_text()
    for settings, message in (
        ({"horizn": 12}, "did you mean 'horizon'"),
        ({**TINY, "input_length": 390}, "^<DataFrame>: 400 rows leave no train"),
    ):
        with pytest.raises(UserError, match=message):
            Forecaster.fit(dataframe(text), tmp_path / "run", **settings)
        assert not (tmp_path / "run").exists()
    lines = text.splitlines()
    fields = lines[6].split(",")
    bad = dataframe(
        "\n".join(lines[:6] + [",".join([fields[0], "x", *fields[2:]])] + lines[7:]) + "\n"
    )  # the frame's row 5 (iloc), CSV line 7
    message = "^<DataFrame> row 5: column 'load' holds 'x', not a number"
    with pytest.raises(UserError, match=message):
        Forecaster.fit(bad, tmp_path / "run", **TINY)
    assert not (tmp_path / "run").exists()
    model = Forecaster.fit(dataframe(text), tmp_path / "good", **TINY)
    with pytest.raises(UserError, match=message):
        model.predict(bad)
    (tmp_path / "mine").mkdir()  # a folder the user made stays, with what was saved there
    with pytest.raises(UserError, match="400 rows leave no train"):
        Forecaster.fit(dataframe(text), tmp_path / "mine", **{**TINY, "input_length": 390})
    assert (tmp_path / "mine").is_dir()


def test_fit_and_predict_on_a_dataframe(tmp_path):
    text = write_sine(tmp_path / "sine.csv", n=400).read_text()
    frame = dataframe(text)
    model = Forecaster.fit(frame, tmp_path / "run", **TINY)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "run" / "series.csv"), frame)
    assert len(model.predict(frame)) == 12


def test_backtest_a_dataframe_from_python(tmp_path):
    from transduce import backtest

    text = write_sine(tmp_path / "sine.csv", n=400).read_text()
    frame = dataframe(text)
    result = backtest(frame, tmp_path / "bt", folds=2, **TINY)
    # 400 rows, 70/10/20: fold 1's test rows end where the protocol's begin (row 320)
    assert [f["split"] for f in result["folds"]] == ["rows:200,240,320", "rows:160,200,280"]
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "bt" / "series.csv"), frame)
    assert json.loads((tmp_path / "bt" / "backtest.json").read_text()) == result
    assert all(math.isfinite(f["mse"]) and f["rho_risk"] for f in result["folds"])

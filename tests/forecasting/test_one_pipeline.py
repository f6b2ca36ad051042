"""One pipeline for both layouts: a global run (a long table of series) fits from Python,
reads past-observed covariates, backtests, tests the steps it held out and shows its
attention through the calls a run of one CSV takes."""

import json
import math

import numpy as np
import pytest

from tests.helpers.forecasting import table
from transduce import backtest
from transduce.api import Forecaster, GlobalForecaster
from transduce.data.panel import read_panel, write_panel
from transduce.errors import UserError

SMALL = dict(
    layout="long",
    horizon=12,
    input_length=36,
    d_model=16,
    d_ff=32,
    num_heads=2,
    num_encoder_layers=1,
    max_epochs=1,
    batch_size=64,
    threads=1,
)

PATCH = dict(model="patch", patch_len=12, stride=12)


def priced(path, n=160, series=3):
    """A long table whose ``y`` follows its ``price`` six steps back: a past-observed
    covariate (known only up to the last observed step)."""
    rng = np.random.default_rng(1)
    ids, steps, values, price = [], [], [], []
    for s in range(series):
        p = np.cumsum(rng.normal(0, 1, n + 6))
        ids.append(f"P{s}")
        steps.append(list(range(1, n + 1)))
        price.append(p[6:])
        values.append(100 + 5 * s + 3 * p[:n] + rng.normal(0, 0.1, n))
    path.write_text(write_panel(None, ids, steps, values, {"price": price}), encoding="utf-8")
    return path


def test_a_global_run_fits_from_python_and_reads_past_observed_covariates(tmp_path):
    csv = priced(tmp_path / "priced.csv")
    model = Forecaster.fit(
        csv, tmp_path / "run", model="channel", mix_channels=True, inputs="price", **SMALL
    )
    assert type(model) is GlobalForecaster
    assert model.columns == ["y", "price"] and model.inputs == 2
    rows = model.predict(series="P1")
    assert len(rows) == 12 and rows[0]["ds"] == "161"
    # the price history is read: another price history, another forecast
    panel = read_panel(csv, known=("price",))
    moved = read_panel(csv, known=("price",))
    moved.known["price"] = [-v for v in panel.known["price"]]  # not a shift: RevIN takes that off
    before = model._found(panel, "P1", None)["forecast"]["P1"]
    after = model._found(moved, "P1", None)["forecast"]["P1"]
    assert np.abs(after - before).max() > 1e-3
    # a model that reads each channel on its own refuses it, as on a wide run
    with pytest.raises(UserError, match="mix_channels"):
        Forecaster.fit(
            csv, tmp_path / "alone", model="channel", mix_channels=False, inputs="price", **SMALL
        )
    assert not (tmp_path / "alone").exists()


def test_a_global_run_backtests_through_the_call_a_wide_run_takes(tmp_path):
    csv = table(tmp_path / "train.csv", lengths=(120, 150, 180))
    result = backtest(csv, tmp_path / "bt", folds=2, **PATCH, **SMALL)
    # fold 1 is scored on each series' last horizon, fold 2 a horizon earlier
    assert [f["split"] for f in result["folds"]] == ["holdout=12", "holdout=24"]
    assert [f["test_dates"] for f in result["folds"]] == [["169", "180"], ["157", "168"]]
    for fold in result["folds"]:
        assert fold["series"] == 3 and fold["smape"] > 0 and math.isfinite(fold["val_mae"])
        assert (tmp_path / "bt" / f"fold_{fold['fold']}" / "config.yaml").is_file()
    assert set(result["mean"]) == {"smape", "mase", "owa"}
    assert result["mean"]["smape"] == pytest.approx(sum(f["smape"] for f in result["folds"]) / 2)
    assert (tmp_path / "bt" / "backtest.png").stat().st_size > 0
    # a fold is a run of its own: its test scores the steps it left out
    fold = Forecaster(tmp_path / "bt" / "fold_2")
    assert fold.test()["smape"] == pytest.approx(result["folds"][1]["smape"])
    # its history ends before them: the forecast is for the steps held out
    assert fold.predict(series="S2")[0]["ds"] == "157"
    # every fold is checked before one trains: fold 9 leaves S0 12 steps, too few to validate
    with pytest.raises(UserError, match=r"^fold 9 \(holdout=108\): .*S0.*lower --folds"):
        backtest(csv, tmp_path / "too_many", folds=9, **PATCH, **SMALL)
    assert not (tmp_path / "too_many" / "fold_1").exists()


def test_a_global_run_shows_the_attention_of_one_series(tmp_path):
    csv = table(tmp_path / "train.csv")
    model = Forecaster.fit(csv, tmp_path / "run", **PATCH, **SMALL)
    got = model.attention(series="S1")
    assert got["layout"] == "patches" and got["channels"] == ["y"]
    assert got["input_dates"][-1] == "200" and got["forecast_dates"][0] == "201"
    weights = np.array(got["weights"])  # (channels, heads, patches, patches)
    assert weights.shape[:2] == (1, 2)
    np.testing.assert_allclose(weights.sum(-1), 1, atol=1e-3)
    with pytest.raises(UserError, match="name one with series=ID"):
        model.attention()


def test_a_global_run_calibrates_its_bands_and_a_blend_of_global_runs_is_refused(tmp_path):
    from transduce.tasks.forecasting.blend import blend_runs

    csv = table(tmp_path / "train.csv")
    settings = dict(**PATCH, **SMALL, quantiles=(0.1, 0.5, 0.9))
    model = Forecaster.fit(csv, tmp_path / "a", **settings)  # calibrated once trained
    record = json.loads((tmp_path / "a" / "calibration.json").read_text())
    assert record["windows"] == 3 and record["levels"] == [0.1, 0.5, 0.9]  # a window a series
    rows = model.predict(series="S0")
    assert all(r["y_q0.1"] <= r["y_q0.5"] <= r["y_q0.9"] for r in rows)
    Forecaster.fit(csv, tmp_path / "b", **{**settings, "seed": 7})
    with pytest.raises(UserError, match="scaled one by one .* members=N"):
        blend_runs([str(tmp_path / "a"), str(tmp_path / "b")], tmp_path / "blend")
    assert not (tmp_path / "blend").exists()

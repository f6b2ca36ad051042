"""A global run's faults, each once a defect of the long path: constant series, ids that look
like paths, values near float32's limit, series too short, test tables of other steps,
daily dates, and options a global run would ignore."""

import json
import math

import numpy as np
import pytest

import transduce
from tests.helpers.forecasting import PANEL_SETTINGS as TINY
from transduce.api import Forecaster
from transduce.cli.main import main
from transduce.data.panel import read_panel, write_panel
from transduce.errors import UserError
from transduce.tasks.forecasting.panel import forecast_panel


def strict_json(path):
    """The file's JSON, failing on the NaN and Infinity tokens JSON does not have."""

    def refuse(token):
        raise AssertionError(f"{path} holds {token}")

    return json.loads(path.read_text(), parse_constant=refuse)


@pytest.mark.parametrize("constant", [1, 3])
def test_constant_series_have_no_mase_and_nothing_non_finite_is_written_or_served(
    tmp_path, capsys, constant
):
    """One constant series of three is left out of MASE and said so; with all three
    constant, MASE and OWA are n/a (null), sMAPE still scores; /info stays JSON."""
    from fastapi.testclient import TestClient

    from transduce.api.describe import describe
    from transduce.serve.app import create_app

    ids = ["S0", "S1", "S2"]
    t = np.arange(1, 121)
    level = [
        np.full(120, 40.0 + 5 * s) if s < constant else 50 + 10 * np.sin(t / 4) for s in range(3)
    ]
    train = tmp_path / "train.csv"
    train.write_text(write_panel(None, ids, [list(t)] * 3, level))
    ahead = np.arange(121, 145)
    truth = [
        np.full(24, 40.0 + 5 * s) if s < constant else 50 + 10 * np.sin(ahead / 4) for s in range(3)
    ]
    test = tmp_path / "test.csv"
    test.write_text(write_panel(None, ids, [list(ahead)] * 3, truth))
    run = tmp_path / "run"
    assert main(["forecast", "train", f"csv={train}", *TINY, "--run-dir", str(run)]) == 0
    capsys.readouterr()
    assert main(["forecast", "test", str(run), "--csv", str(test)]) == 0
    out = capsys.readouterr().out
    result = strict_json(run / "test_results.json")
    assert result["mase_series"] == 3 - constant and math.isfinite(result["smape"])
    if constant == 3:
        assert result["mase"] is None and result["owa"] is None
        assert "MASE n/a OWA n/a" in out
    else:
        assert math.isfinite(result["mase"]) and math.isfinite(result["owa"])
        assert "MASE over 2 of 3 series: the others' histories repeat exactly" in out
    model = transduce.load(run)
    with TestClient(create_app(model, describe(str(run), model))) as client:
        info = client.get("/info")
        assert info.status_code == 200 and info.json()["scores"]["test"]["owa"] == result["owa"]


def test_a_series_id_that_looks_like_a_path_plots_inside_the_run(tmp_path, capsys):
    ids = ["../../escape", "S1"]
    t = np.arange(1, 121)
    train = tmp_path / "train.csv"
    train.write_text(write_panel(None, ids, [list(t)] * 2, [50 + 10 * np.sin(t / 4)] * 2))
    run = tmp_path / "deep" / "er" / "run"
    assert main(["forecast", "train", f"csv={train}", *TINY, "--run-dir", str(run)]) == 0
    assert main(["forecast", "plot", str(run), "--series", "../../escape"]) == 0
    assert (run / "forecast_.._.._escape.png").is_file()
    assert sorted(p.name for p in (tmp_path / "deep").rglob("*.png")) == [
        "forecast_.._.._escape.png"
    ]


def test_values_near_float32s_limit_are_forecast_as_the_same_values_scaled_down(global_run):
    """Each window is divided by its mean magnitude, summed in float64: a table up to 2.6e38
    is forecast as the same table scaled down would be (a float32 sum made the scale inf,
    and the forecast -inf). A forecast that is still not finite is a one-line error
    (check_finite, tested through the one-series path in test_faults.py)."""
    run, csv = global_run
    panel = read_panel(csv)
    found = forecast_panel(Forecaster(run), panel)
    panel.values = [v * 3e36 for v in panel.values]  # up to 2.6e38, within float32
    huge = forecast_panel(Forecaster(run), panel)
    np.testing.assert_allclose(huge["forecast"]["S0"], 3e36 * found["forecast"]["S0"], rtol=1e-4)


@pytest.mark.parametrize("length", [26, 48])  # horizon + 2 and 2 × horizon
def test_series_too_short_to_train_on_are_one_line_and_leave_no_run(tmp_path, capsys, length):
    train = tmp_path / "train.csv"
    t = np.arange(1, length + 1)
    train.write_text(write_panel(None, ["a", "b"], [list(t)] * 2, [10 + np.sin(t)] * 2))
    run = tmp_path / "run"
    assert main(["forecast", "train", f"csv={train}", *TINY, "--run-dir", str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert "no series is long enough to train on: a training window needs" in err[0]
    assert "2 × horizon + 1 = 49 steps" in err[0] and f"the longest series has {length}" in err[0]
    assert not run.exists()


def test_a_test_table_of_other_steps_than_the_forecasts_is_refused(global_run, tmp_path, capsys):
    run, _ = global_run
    results = run / "test_results.json"
    before = results.read_text() if results.exists() else None
    ids, lengths = ["S0", "S1", "S2"], (150, 200, 260)
    shifted = tmp_path / "shifted.csv"  # S1's steps a season late
    steps = [
        list(range(n + 1 + 24 * (s == 1), n + 25 + 24 * (s == 1))) for s, n in enumerate(lengths)
    ]
    shifted.write_text(write_panel(None, ids, steps, [np.ones(24)] * 3))
    assert main(["forecast", "test", str(run), "--csv", str(shifted)]) == 2
    err = capsys.readouterr().err
    assert "series S1 starts at ds 225 where its forecast is for 201" in err
    dated = tmp_path / "dated.csv"
    dated.write_text(
        "unique_id,ds,y\n" + "".join(f"{i},2021-01-{d:02d},1\n" for i in ids for d in range(1, 25))
    )
    assert main(["forecast", "test", str(run), "--csv", str(dated)]) == 2
    assert "holds dates, and the run forecasts integer steps" in capsys.readouterr().err
    assert (results.read_text() if results.exists() else None) == before  # nothing written


def test_a_daily_global_run_prints_dates_without_a_time(tmp_path, capsys):
    from datetime import date, timedelta

    days = [date(2021, 1, 1) + timedelta(days=k) for k in range(150)]
    t = np.arange(150)
    train = tmp_path / "daily.csv"
    train.write_text(
        "unique_id,ds,y\n"
        + "".join(
            f"{s},{d},{50 + 10 * n + np.sin(k / 3):.3f}\n"
            for n, s in enumerate("AB")
            for k, d in zip(t, days)
        )
    )
    run = tmp_path / "run"
    settings = [s for s in TINY if not s.startswith("season")]
    assert main(["forecast", "train", f"csv={train}", *settings, "--run-dir", str(run)]) == 0
    capsys.readouterr()
    assert main(["forecast", "predict", str(run), "--series", "B"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[1].startswith("B,2021-05-31,") and rows[-1].startswith("B,2021-06-23,")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["plot", "--series", "S0", "--window", "3"], "--window is for a run of one CSV"),
        (["plot", "--series", "S0", "--future"], "--future is for a run of one CSV"),
        (["test", "--csv", "t.csv", "--drop-last", "32"], "--drop-last is for a run of one CSV"),
        (["predict", "--known", "k.csv"], "reads no known covariates (it was trained without"),
        (["plot", "--series", "S0", "--known", "k.csv"], "reads no known covariates"),
    ],
)
def test_options_a_global_run_would_ignore_are_refused(global_run, capsys, argv, message):
    run, _ = global_run
    assert main(["forecast", argv[0], str(run), *argv[1:]]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_serve_known_for_a_global_run_without_covariates_is_refused(global_run):
    run, _ = global_run
    with pytest.raises(UserError, match="reads no known covariates"):
        transduce.load(run).read_known("k.csv")

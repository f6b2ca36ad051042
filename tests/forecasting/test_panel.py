"""Many series, one model: a global run, its forecasts and scores, its faults, and what
serve shows of it (the long table itself: tests/data/test_panel.py)."""

import math

import numpy as np
import pytest

import transduce
from tests.helpers.forecasting import PANEL_SETTINGS as TINY
from tests.helpers.forecasting import table
from transduce.api import Forecaster, GlobalForecaster
from transduce.cli.main import main
from transduce.data.panel import read_panel, write_panel
from transduce.errors import UserError
from transduce.tasks.forecasting.panel import forecast_panel


def test_a_global_run_forecasts_every_series_and_follows_its_scale(global_run, tmp_path):
    run, csv = global_run
    assert isinstance(Forecaster(run), GlobalForecaster)
    found = forecast_panel(Forecaster(run), csv)
    assert list(found["forecast"]) == ["S0", "S1", "S2"]
    assert found["steps"]["S0"] == list(range(151, 175))
    assert found["forecast"]["S1"].shape == (24, 3)  # point, q0.5, q0.9
    assert (found["forecast"]["S1"][:, 1] <= found["forecast"]["S1"][:, 2]).all()
    # each window is scaled by its own input: a series ten times larger, forecast ten times
    panel = read_panel(csv)
    panel.values = [v * 10 for v in panel.values]
    again = forecast_panel(Forecaster(run), panel)
    np.testing.assert_allclose(again["forecast"]["S2"], 10 * found["forecast"]["S2"], rtol=1e-4)


def test_predict_test_and_plot_on_the_command_line(global_run, tmp_path, capsys):
    run, csv = global_run
    test = tmp_path / "test.csv"
    ids, steps, values = [], [], []
    for s, n in enumerate((150, 200, 260)):
        t = np.arange(n + 1, n + 25)
        ids.append(f"S{s}"), steps.append(list(t))
        values.append(50 + 10 * s + 10 * np.sin(2 * np.pi * t / 24))
    test.write_text(write_panel(None, ids, steps, values))
    assert main(["forecast", "test", str(run), "--csv", str(test)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("3 series, horizon 24: sMAPE ") and "R0.9" in out
    assert main(["forecast", "predict", str(run), "--series", "S2"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0] == "unique_id,ds,y,y_q0.5,y_q0.9" and rows[1].startswith("S2,261,")
    assert len(rows) == 25
    assert (
        main(["forecast", "plot", str(run), "--series", "S1", "--output", str(tmp_path / "s1.png")])
        == 0
    )
    assert (tmp_path / "s1.png").stat().st_size > 10_000
    assert main(["forecast", "plot", str(run)]) == 2
    assert "name one with --series ID" in capsys.readouterr().err
    assert main(["forecast", "predict", str(run), "--series", "nope"]) == 2
    assert "no series 'nope'" in capsys.readouterr().err


def test_serve_shows_a_series_of_a_global_run(global_run):
    from fastapi.testclient import TestClient

    from transduce.api.describe import describe
    from transduce.serve.app import create_app

    run, _ = global_run
    model = transduce.load(run)
    with TestClient(create_app(model, describe(str(run), model))) as client:
        info = client.get("/info").json()
        assert info["kind"] == "global" and info["series"] == ["S0", "S1", "S2"]
        got = client.post("/forecast/series", json={"series": "S1"}).json()
        assert len(got["forecast"]) == 24 and got["forecast"][0]["ds"] == "201"
        assert len(got["history"]) == 96 and got["history"][-1]["ds"] == "200"
        assert math.isfinite(got["forecast"][0]["y_q0.9"])
        bad = client.post("/forecast/series", json={"series": "nope"})
        assert bad.status_code in (400, 404, 422) and "no series 'nope'" in bad.json()["error"]
        assert client.post("/translate", json={"sentences": ["x"]}).status_code == 404
        # a logsparse model keeps no attention to show: a 4xx naming the models that do
        none = client.post("/explain/forecast/series", json={"series": "S1"})
        assert none.status_code in (400, 422) and "has no attention" in none.json()["error"]
        assert client.post("/explain/forecast", json={"csv": "x"}).status_code == 404


def test_log_scaling_round_trips_follows_the_level_and_refuses_non_positive_values(tmp_path):
    from transduce.data.windows import Windows
    from transduce.tasks.forecasting.config import ForecastConfig
    from transduce.tasks.forecasting.panel import check_scaling, training_starts

    csv = table(tmp_path / "train.csv")
    panel = read_panel(csv)
    cfg = ForecastConfig.of(csv=str(csv), layout="long", scaling="log", input_length=72, horizon=24)
    windows = Windows(
        values=[v[:, None] for v in panel.values],
        times=[np.zeros((len(v), 4), np.float32) for v in panel.values],
        input_length=72,
        horizon=24,
        starts=training_starts(panel, 72, 24)[:50],
        scaling=cfg.layout.scaling,
    )
    x, y, _, _, levels = windows.batch(range(50))
    assert np.allclose(x[..., 0].mean(1).numpy(), 0, atol=1e-5)  # log less the input's mean
    truth = np.stack(
        [panel.values[s][np.clip(np.arange(st + 72, st + 96), 0, None)] for s, st in windows.starts]
    )
    np.testing.assert_allclose(windows.restore(y[..., 0].numpy(), levels), truth, rtol=1e-5)
    run = tmp_path / "run"
    assert (
        main(
            [
                "forecast",
                "train",
                f"csv={csv}",
                "model=patch",
                "patch_len=12",
                "stride=12",
                "scaling=log",
                *TINY,
                "--run-dir",
                str(run),
            ]
        )
        == 0
    )
    found = forecast_panel(Forecaster(run), csv)
    panel.values = [v * 10 for v in panel.values]
    np.testing.assert_allclose(
        forecast_panel(Forecaster(run), panel)["forecast"]["S2"],
        10 * found["forecast"]["S2"],
        rtol=1e-4,
    )
    panel.values[1][5] = 0.0
    with pytest.raises(UserError, match="series S1 has a value 0 <= 0, and scaling=log"):
        check_scaling(panel, cfg, csv)
    with pytest.raises(UserError, match="trained with scaling=log: give a history of pos"):
        forecast_panel(Forecaster(run), panel)
    with pytest.raises(UserError, match="scaling is a setting of the long layout, not wide"):
        ForecastConfig.of(csv=str(csv), scaling="log").validate("settings")


def promo_table(path, lengths=(300, 360, 420), future=0, seed=0):
    """Series of 50 + 10 s + 30 · promo, a known-future flag on about one step in four; with
    ``future`` the table of each series' next ``future`` steps (its flag, no y)."""
    rng = np.random.default_rng(seed)
    lines = ["unique_id,ds,y,promo"] if not future else ["unique_id,ds,promo"]
    for s, n in enumerate(lengths):
        for t in range(n + 1, n + future + 1) if future else range(1, n + 1):
            promo = int(rng.random() < 0.25)
            y = 50 + 10 * s + 30 * promo + rng.normal(0, 1)
            lines.append(f"S{s},{t},{promo}" if future else f"S{s},{t},{y:.3f},{promo}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_global_run_reads_known_future_covariates(tmp_path, capsys, outcome):
    csv = promo_table(tmp_path / "train.csv")
    panel = read_panel(csv, known=("promo",))
    assert panel.known["promo"][1].shape == (360,) and set(panel.known["promo"][0]) == {0, 1}
    with pytest.raises(UserError, match="columns promo are not read: name them known=promo"):
        read_panel(csv)
    run = tmp_path / "run"
    assert (
        main(
            [
                "forecast",
                "train",
                f"csv={csv}",
                "known=promo",
                "model=patch",
                "patch_len=12",
                "stride=12",
                *TINY[:-3],
                "max_epochs=20",
                "lr=0.003",
                "batch_size=64",
                "quantiles=0.5,0.9",
                "threads=1",
                *outcome.args(2021),
                "--run-dir",
                str(run),
            ]
        )
        == 0
    )
    capsys.readouterr()
    future = promo_table(tmp_path / "future.csv", future=24)
    found = forecast_panel(Forecaster(run), csv, future=future)
    ahead = read_panel(future, known=("promo",), target=False)
    gaps = []
    for s in range(3):  # the forecast follows the flag it was given for each step
        flag, point = ahead.known["promo"][s], found["forecast"][f"S{s}"][:, 0]
        gaps.append(float(point[flag == 1].mean() - point[flag == 0].mean()))
    outcome.check("promo_gap", gaps)
    assert main(["forecast", "predict", str(run), "--known", str(future), "--series", "S1"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0] == "unique_id,ds,y,y_q0.5,y_q0.9" and rows[1].startswith("S1,361,")
    assert (
        main(
            [
                "forecast",
                "plot",
                str(run),
                "--series",
                "S0",
                "--known",
                str(future),
                "--output",
                str(tmp_path / "s0.png"),
            ]
        )
        == 0
    )
    assert (tmp_path / "s0.png").stat().st_size > 10_000
    assert main(["forecast", "predict", str(run)]) == 2
    assert "reads the known covariates promo: give their values" in capsys.readouterr().err
    from fastapi.testclient import TestClient

    from transduce.api.describe import describe
    from transduce.serve.app import create_app

    model = transduce.load(run)  # no --known: the page says what it needs, and keeps serving
    with TestClient(create_app(model, describe(str(run), model))) as client:
        bad = client.post("/forecast/series", json={"series": "S1"})
        assert bad.status_code == 422 and "reads the known covariates promo" in bad.json()["error"]
        assert client.get("/info").json()["series"] == ["S0", "S1", "S2"]
        model.read_known(future)  # what serve --known FILE does
        got = client.post("/forecast/series", json={"series": "S1"}).json()
        assert [row["y"] for row in got["forecast"]] == pytest.approx(
            found["forecast"]["S1"][:, 0].tolist(), rel=1e-5
        )
    short = tmp_path / "short.csv"
    short.write_text("\n".join(future.read_text().splitlines()[:30]) + "\n")
    assert main(["forecast", "predict", str(run), "--known", str(short)]) == 2
    assert (
        "series 'S1' needs a row at each of its next 24 steps, 361 to 384, with promo"
        in capsys.readouterr().err
    )


def test_one_forecaster_class_opens_a_global_run_with_a_series_selector(global_run, tmp_path):
    from transduce.api.forecaster import Forecaster
    from transduce.api.panel import GlobalForecaster

    run, csv = global_run
    model = Forecaster(run)
    assert type(model) is GlobalForecaster and isinstance(transduce.load(run), Forecaster)
    rows = model.predict(series="S1")
    assert len(rows) == 24 and rows[0]["unique_id"] == "S1" and rows[0]["ds"] == "201"
    assert set(rows[0]) == {"unique_id", "ds", "y", "y_q0.5", "y_q0.9"}
    assert {r["unique_id"] for r in model.predict()} == {"S0", "S1", "S2"}
    assert model.plot(series="S0") == run / "forecast_S0.png"
    with pytest.raises(UserError, match="name one with --series ID"):
        model.plot()
    with pytest.raises(UserError, match="give --csv TEST.csv"):
        model.test()
    with pytest.raises(UserError, match="name one with series=ID"):
        model.attention()


def test_a_run_of_one_csv_refuses_a_series_selector(forecast_run):
    from transduce.api.forecaster import Forecaster

    run, _ = forecast_run
    model = Forecaster(run)
    assert type(model) is Forecaster
    with pytest.raises(UserError, match="series= is for a global run"):
        model.predict(series="load")
    with pytest.raises(UserError, match="known= is for a global run"):
        model.plot(known="k.csv")
    with pytest.raises(UserError, match="a test table is for a global run"):
        model.test("t.csv")

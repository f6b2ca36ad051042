"""`transduce forecast blend`: weights chosen on validation, the blend scored on test."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import transduce
from tests.helpers.forecasting import write_sine
from transduce.api.forecaster import Forecaster
from transduce.cli.main import main
from transduce.errors import UserError
from transduce.nn.forecasting.blend import Blend
from transduce.nn.forecasting.linear import LinearForecaster
from transduce.tasks.forecasting.blend import blend_runs, point_forecasts, simplex, truth
from transduce.tasks.forecasting.rundir import load_run


def test_the_grid_covers_the_simplex_with_each_run_alone_first():
    grid = simplex(3, 0.25)
    assert len(grid) == 15  # C(4 + 2, 2) points of quarters summing to 1
    assert grid[:3] == [(1, 0, 0), (0, 1, 0), (0, 0, 1)]
    assert all(abs(sum(point) - 1) < 1e-12 for point in grid)
    assert len(set(grid)) == len(grid) and (0.5, 0.25, 0.25) in grid
    assert len(simplex(2, 0.1)) == 11
    for step in (0.3, 0, -0.5, 2):
        with pytest.raises(UserError, match=f"--step {step:g} must divide 1"):
            simplex(2, step)


def test_a_blend_is_the_weighted_mean_of_members_reading_their_own_input_length():
    torch.manual_seed(0)
    short, long = (
        LinearForecaster(input_length=8, horizon=4),
        LinearForecaster(input_length=16, horizon=4),
    )
    x = torch.randn(3, 16, 2)
    blend = Blend(
        members=[short, long], input_lengths=[8, 16], weights=[0.25, 0.75], quantiles=False
    )
    y, _ = blend(x, torch.zeros(3, 16, 4), torch.zeros(3, 4, 4))
    expected = 0.25 * short(x[:, 8:])[0] + 0.75 * long(x)[0]
    torch.testing.assert_close(y, expected)
    alone = Blend(
        members=[short, long], input_lengths=[8, 16], weights=[1.0, 0.0], quantiles=False
    )(x)[0]
    torch.testing.assert_close(alone, short(x[:, 8:])[0])


PATCH = [
    "model=patch",
    "input_length=24",
    "patch_len=8",
    "stride=4",
    "d_model=16",
    "d_ff=32",
    "num_heads=2",
    "num_encoder_layers=1",
    "quantiles=0.1,0.5,0.9",
    "calibrate=false",
]


@pytest.fixture(scope="module")
def runs_on_a_sine(tmp_path_factory):
    """Runs on one noisy sine, horizon 12: linear maps reading 48 and 24 steps, and two patch
    Transformers with quantiles reading 24 (seeds 1 and 2); and a linear map with horizon 6."""
    root = tmp_path_factory.mktemp("blend")
    csv = write_sine(root / "sine.csv")
    runs = {}
    for name, keys in {
        "linear48": ["model=linear", "input_length=48"],
        "linear24": ["model=linear", "input_length=24"],
        "patch24": [*PATCH, "seed=1"],
        "patch24b": [*PATCH, "seed=2"],
        "horizon6": ["model=linear", "input_length=24", "horizon=6"],
    }.items():
        assert (
            main(
                [
                    "forecast",
                    "train",
                    f"csv={csv}",
                    "horizon=12",
                    *keys,
                    "max_epochs=2",
                    "threads=1",
                    "--run-dir",
                    str(root / name),
                ]
            )
            == 0
        )
        runs[name] = str(root / name)
    return runs


def test_the_weights_are_those_of_lowest_validation_mse_and_test_is_their_blend(
    runs_on_a_sine, tmp_path, capsys
):
    runs = [runs_on_a_sine["linear48"], runs_on_a_sine["linear24"], runs_on_a_sine["patch24"]]
    assert main(["forecast", "blend", *runs, "--out", str(tmp_path / "b"), "--step", "0.5"]) == 0
    record = json.loads((tmp_path / "b" / "blend.json").read_text())
    assert "blend: validation mse" in capsys.readouterr().out
    loaded = [load_run(run) for run in runs]
    data = loaded[0][2]  # the longest input
    val, test = truth(data, "val"), truth(data, "test")
    val_f = [point_forecasts(m, data, "val", cfg.input_length) for cfg, m, _ in loaded]
    test_f = [point_forecasts(m, data, "test", cfg.input_length) for cfg, m, _ in loaded]

    def mse(weights, forecasts, target):
        return float(((sum(w * f for w, f in zip(weights, forecasts)) - target) ** 2).mean())

    every = {point: mse(point, val_f, val) for point in simplex(3, 0.5)}
    assert tuple(record["weights"]) == min(every, key=every.get)
    assert record["val_mse"] == pytest.approx(min(every.values()))
    assert record["val_mse"] <= min(record["val_mse_alone"])
    assert record["val_mse_alone"] == pytest.approx(
        [every[(1, 0, 0)], every[(0, 1, 0)], every[(0, 0, 1)]]
    )
    assert record["test"]["mse"] == pytest.approx(mse(record["weights"], test_f, test))
    assert record["input_lengths"] == [48, 24, 24]
    assert record["models"] == ["linear", "linear", "patch"]


def test_equal_weights_give_the_mean_and_choose_nothing(runs_on_a_sine, tmp_path, capsys):
    runs = [runs_on_a_sine["linear48"], runs_on_a_sine["linear24"], runs_on_a_sine["patch24"]]
    assert main(["forecast", "blend", *runs, "--out", str(tmp_path / "b"), "--equal"]) == 0
    assert "nothing was chosen on validation" in capsys.readouterr().out
    record = json.loads((tmp_path / "b" / "blend.json").read_text())
    loaded = [load_run(run) for run in runs]
    data = loaded[0][2]
    val, test = truth(data, "val"), truth(data, "test")
    val_f = [point_forecasts(m, data, "val", cfg.input_length) for cfg, m, _ in loaded]
    test_f = [point_forecasts(m, data, "test", cfg.input_length) for cfg, m, _ in loaded]
    assert record["weights"] == pytest.approx([1 / 3] * 3)
    assert record["equal"] is True and record["step"] is None
    assert record["val_mse"] == pytest.approx(float(((sum(val_f) / 3 - val) ** 2).mean()))
    assert record["test"]["mse"] == pytest.approx(float(((sum(test_f) / 3 - test) ** 2).mean()))
    assert record["val_mse_alone"] == pytest.approx([float(((f - val) ** 2).mean()) for f in val_f])


def test_a_bag_of_blends_is_the_mean_of_the_blends_and_loads_like_a_run(
    runs_on_a_sine, tmp_path, capsys
):
    runs = runs_on_a_sine
    first = blend_runs([runs["patch24"], runs["linear24"]], tmp_path / "first", step=0.5)
    second = blend_runs([runs["patch24b"], runs["linear48"]], tmp_path / "second", step=0.5)
    bag = blend_runs(
        [str(tmp_path / "first"), str(tmp_path / "second")], tmp_path / "bag", equal=True
    )
    assert bag["weights"] == [0.5, 0.5]
    assert all(model.startswith("blend of ") for model in bag["models"])
    cfg, model, data = load_run(tmp_path / "bag")
    test = truth(data, "test")
    each = [
        point_forecasts(load_run(tmp_path / name)[1], data, "test", cfg.input_length)
        for name in ("first", "second")
    ]
    mean = (each[0] + each[1]) / 2
    assert bag["test"]["mse"] == pytest.approx(float(((mean - test) ** 2).mean()))
    assert bag["test"]["mse"] != pytest.approx(first["test"]["mse"])
    assert bag["test"]["mse"] != pytest.approx(second["test"]["mse"])
    assert main(["forecast", "test", str(tmp_path / "bag")]) == 0
    assert f"{bag['test']['mse']:.4f}" in capsys.readouterr().out


def test_quantiles_are_blended_only_when_every_chosen_run_has_the_same_levels(
    runs_on_a_sine, tmp_path, monkeypatch
):
    runs = runs_on_a_sine
    both = blend_runs([runs["patch24"], runs["patch24b"]], tmp_path / "a", step=0.5)
    assert both["quantiles"] == [0.1, 0.5, 0.9]
    assert set(both["test"]["rho_risk"]) == {"0.1", "0.5", "0.9"}
    assert 0 < both["test"]["coverage"]["0.1-0.9"] <= 1
    # a patch Transformer and a linear map (no quantiles) given weight both: point only
    monkeypatch.setattr(
        "transduce.tasks.forecasting.blend.simplex", lambda count, step: [(0.5, 0.5)]
    )
    mixed = blend_runs([runs["patch24"], runs["linear24"]], tmp_path / "b")
    assert mixed["weights"] == [0.5, 0.5]
    assert mixed["quantiles"] == [] and "rho_risk" not in mixed["test"]


def test_blended_quantiles_stay_ordered(runs_on_a_sine):
    members = [load_run(runs_on_a_sine[name]) for name in ("patch24", "patch24b")]
    blend = Blend(
        members=[m for _, m, _ in members],
        input_lengths=[24, 24],
        weights=[0.5, 0.5],
        quantiles=True,
    ).eval()
    x, _, x_time, y_time = next(iter(members[0][2].loader("test", 8)))
    with torch.no_grad():
        y, _ = blend(x, x_time, y_time)
        each = [m(x, x_time, y_time)[0] for _, m, _ in members]
    assert y.shape[-1] == 4  # the point forecast and three quantiles
    torch.testing.assert_close(y, 0.5 * each[0] + 0.5 * each[1])
    assert (y[..., 1:].diff(dim=-1) >= 0).all()


def test_runs_that_forecast_different_things_are_refused(runs_on_a_sine, tmp_path):
    with pytest.raises(
        UserError, match="horizon6: has another horizon than .*linear24; blend runs"
    ):
        blend_runs([runs_on_a_sine["linear24"], runs_on_a_sine["horizon6"]], tmp_path / "x")
    with pytest.raises(UserError, match="two or more run directories"):
        blend_runs([runs_on_a_sine["linear24"]], tmp_path / "x")
    assert not (tmp_path / "x").exists()  # nothing written
    (tmp_path / "file").write_text("")
    with pytest.raises(UserError, match="a file is there"):
        blend_runs([runs_on_a_sine["linear24"], runs_on_a_sine["linear48"]], tmp_path / "file")
    with pytest.raises(UserError, match="file: is a file where --output needs a folder"):
        blend_runs(
            [runs_on_a_sine["linear24"], runs_on_a_sine["linear48"]], tmp_path / "file" / "blend"
        )  # refused before any run is loaded
    with pytest.raises(UserError, match="a run directory; give the blend a folder of its own"):
        blend_runs(
            [runs_on_a_sine["linear24"], runs_on_a_sine["linear48"]], runs_on_a_sine["linear24"]
        )
    assert not (Path(runs_on_a_sine["linear24"]) / "blend.json").exists()
    with pytest.raises(UserError, match="no-such-run"):
        blend_runs([runs_on_a_sine["linear24"], str(tmp_path / "no-such-run")], tmp_path / "x")
    assert (
        main(
            [
                "forecast",
                "blend",
                runs_on_a_sine["linear24"],
                runs_on_a_sine["horizon6"],
                "--out",
                str(tmp_path / "y"),
            ]
        )
        != 0
    )
    assert not (tmp_path / "y").exists()


def test_blend_json_is_readable_and_its_runs_absolute(runs_on_a_sine, tmp_path):
    record = blend_runs([runs_on_a_sine["linear48"], runs_on_a_sine["linear24"]], tmp_path / "b")
    saved = json.loads((tmp_path / "b" / "blend.json").read_text())
    assert saved["weights"] == record["weights"] and np.isclose(sum(saved["weights"]), 1)
    assert all(run.startswith("/") for run in saved["runs"])


def test_a_blend_folder_tests_predicts_and_plots_like_a_run(runs_on_a_sine, tmp_path, capsys):
    members = [runs_on_a_sine["patch24"], runs_on_a_sine["patch24b"]]
    out = tmp_path / "blend"
    record = blend_runs(members, out, step=0.25)
    csv = load_run(members[0])[0].csv
    assert main(["forecast", "test", str(out)]) == 0
    assert f"test mse {record['test']['mse']:.4f}" in capsys.readouterr().out
    blend = transduce.load(str(out))
    assert isinstance(blend, Forecaster)
    dates, values = blend.predict_arrays(blend._history(csv)[0])
    each = [Forecaster(run).predict_arrays(Forecaster(run)._history(csv)[0])[1] for run in members]
    np.testing.assert_allclose(
        values, sum(w * v for w, v in zip(record["weights"], each)), rtol=1e-5, atol=1e-6
    )
    assert (
        main(
            ["forecast", "predict", str(out), "--csv", csv, "--output", str(tmp_path / "next.csv")]
        )
        == 0
    )
    header = (tmp_path / "next.csv").read_text().splitlines()[0].split(",")
    assert [c for c in header if c.startswith("load")] == [
        "load",
        "load_q0.1",
        "load_q0.5",
        "load_q0.9",
    ]
    assert main(["forecast", "plot", str(out), "--window", "1"]) == 0
    assert main(["forecast", "plot", str(out), "--future", "--csv", csv]) == 0
    assert (out / "forecast_1.png").stat().st_size > 0
    assert (out / "forecast_future.png").stat().st_size > 0


def test_a_blend_whose_runs_moved_or_whose_record_is_damaged_is_one_line_error(
    runs_on_a_sine, tmp_path, capsys
):
    out = tmp_path / "blend"
    blend_runs([runs_on_a_sine["linear48"], runs_on_a_sine["linear24"]], out)
    record = json.loads((out / "blend.json").read_text())
    (out / "blend.json").write_text(
        json.dumps({**record, "runs": [record["runs"][0], str(tmp_path / "gone")]})
    )
    assert main(["forecast", "test", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "gone" in err and "blend the runs again" in err and len(err.splitlines()) == 1
    (out / "blend.json").write_text('{"runs": ["a"], "weights": [')
    assert main(["forecast", "predict", str(out), "--csv", str(tmp_path / "x.csv")]) == 2
    assert "not a blend.json that forecast blend wrote" in capsys.readouterr().err
    assert main(["forecast", "calibrate", str(out)]) == 2
    assert "a blend; calibrate each of its runs" in capsys.readouterr().err

"""Adding a forecasting model is one new file (example_model.py) and one registration line:
it then trains, tests and forecasts from the command line, with its own settings checked
and the other models' settings refused."""

import pytest

from tests.forecasting.example_model import DriftConfig
from tests.helpers.forecasting import refused, write_sine
from transduce.api.forecaster import Forecaster
from transduce.cli.main import main
from transduce.tasks.forecasting.models import MODELS


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setitem(MODELS, DriftConfig.NAME, DriftConfig)  # the one registration line


def test_a_new_model_trains_tests_and_forecasts(registered, tmp_path, capsys):
    csv = write_sine(tmp_path / "sine.csv")
    run = tmp_path / "run"
    assert (
        main(
            [
                "forecast",
                "train",
                f"csv={csv}",
                "model=drift",
                "damping=0.9",
                "input_length=24",
                "horizon=6",
                "max_epochs=1",
                "threads=1",
                "--run-dir",
                str(run),
            ]
        )
        == 0
    )
    assert "model:\n  name: drift\n  damping: 0.9" in (run / "config.yaml").read_text()
    assert main(["forecast", "test", str(run)]) == 0
    assert "test mse" in capsys.readouterr().out
    forecaster = Forecaster(run)
    assert forecaster.cfg.model == DriftConfig(damping=0.9)
    assert len(forecaster.predict()) == 6


@pytest.mark.parametrize(
    "settings, message",
    [
        (["model=drift", "damping=2"], "damping must be at least 0 and at most 1, not 2.0"),
        (["model=drift", "patch_len=8"], "patch_len is a setting of the patch model, not drift"),
        (["model=patch", "damping=0.5"], "damping is a setting of the drift model, not patch"),
    ],
)
def test_its_settings_are_its_own(registered, tmp_path, capsys, settings, message):
    assert message in refused(tmp_path, capsys, ["max_epochs=1", "threads=1", *settings])


def test_unregistered_it_is_no_choice(tmp_path, capsys):
    assert (
        "model must be one of transformer, patch, channel, linear, sparse, repeat, "
        "logsparse, not "
        "'drift'" in refused(tmp_path, capsys, ["model=drift"])
    )

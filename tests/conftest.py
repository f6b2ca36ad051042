import os

import pytest
import torch

from tests.helpers.outcomes import PRECISIONS, Outcome, skip_emulated_bf16
from tests.helpers.text import TINY, number_corpus


@pytest.fixture(params=PRECISIONS)
def outcome(request, record_property) -> Outcome:
    """A training-outcome test's precision, seeds and bound checks (tests/helpers/outcomes.py)."""
    skip_emulated_bf16(request.param)
    return Outcome(request.param, request.node, record_property)


def pytest_collection_modifyitems(config, items):
    """A test that takes `outcome` (itself or through a fixture) is a training-outcome test:
    `pytest -m outcome` selects them, as `make test` does under each CPU kernel."""
    for item in items:
        if "outcome" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.outcome)


def pytest_configure(config):
    """`make test` runs the suite in two pytest-xdist workers, one per core. Each worker, and
    every process it starts, then uses one thread: two processes of two threads each on two
    cores slow each other several times over."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ["OMP_NUM_THREADS"] = "1"
        torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same random state and thread count, so a failure
    reproduces whatever ran before it (a training run may set the thread count)."""
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def corpus(tmp_path):
    return number_corpus(tmp_path / "data")


@pytest.fixture
def config(tmp_path, corpus):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY.format(data=corpus), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory):
    """One tiny trained run directory shared by the translation tests (read-only for them)."""
    from transduce.cli.main import main

    root = tmp_path_factory.mktemp("trained")
    folder = number_corpus(root / "data")
    config = root / "tiny.yaml"
    config.write_text(TINY.format(data=folder), encoding="utf-8")
    assert main(["train", str(config), "--run-dir", str(root / "run")]) == 0
    return root / "run"


TINY_DEMO = [
    "max_steps=2",
    "valid_every=2",
    "held_out=20",
    "valid_numbers=10",
    "d_model=32",
    "d_ff=64",
    "num_heads=2",
    "num_encoder_layers=1",
    "num_decoder_layers=1",
    "examples=1",
    "threads=1",
]


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """A demo run of two updates (read-only for the tests)."""
    from transduce.cli.main import main

    out = tmp_path_factory.mktemp("demo") / "run"
    assert main(["demo", *TINY_DEMO, "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="session")
def forecast_run(tmp_path_factory):
    """A linear forecaster trained one epoch on a noisy sine (read-only for the tests):
    (run directory, its CSV)."""
    from tests.helpers.forecasting import write_sine
    from transduce.cli.main import main

    root = tmp_path_factory.mktemp("forecast")
    csv = write_sine(root / "sine.csv")
    assert (
        main(
            [
                "forecast",
                "train",
                f"csv={csv}",
                "input_length=48",
                "horizon=12",
                "model=linear",
                "max_epochs=1",
                "--run-dir",
                str(root / "run"),
            ]
        )
        == 0
    )
    return root / "run", csv


@pytest.fixture(scope="session")
def global_run(tmp_path_factory):
    """A global run (logsparse) of three series of a long table, read-only: (run, table)."""
    from tests.helpers.forecasting import PANEL_SETTINGS, table
    from transduce.cli.main import main

    root = tmp_path_factory.mktemp("panel")
    csv = table(root / "train.csv")
    assert (
        main(
            [
                "forecast",
                "train",
                f"csv={csv}",
                "model=logsparse",
                "kernel=3",
                *PANEL_SETTINGS,
                "--run-dir",
                str(root / "run"),
            ]
        )
        == 0
    )
    return root / "run", csv

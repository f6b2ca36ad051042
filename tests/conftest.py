import contextlib
import os
import random
from dataclasses import dataclass
from typing import Callable

import pytest
import torch

from transduce.data.numbers import english, german

# Training-outcome tests (those that take the `outcome` fixture) run once per precision here.
# TRANSDUCE_TEST_PRECISIONS=fp32 (or bf16) runs them in one only; TRANSDUCE_TEST_SEED adds an
# offset to their seeds, which benchmarks/outcomes/spread.py uses to measure their margins.
PRECISIONS = tuple(p.strip() for p in
                   os.environ.get("TRANSDUCE_TEST_PRECISIONS", "fp32,bf16").split(",")
                   if p.strip())
if not PRECISIONS or set(PRECISIONS) - {"fp32", "bf16"}:
    raise pytest.UsageError("TRANSDUCE_TEST_PRECISIONS: give fp32, bf16 or fp32,bf16, not "
                            f"{os.environ['TRANSDUCE_TEST_PRECISIONS']!r}")
SEED_OFFSET = int(os.environ.get("TRANSDUCE_TEST_SEED", "0"))


@dataclass(frozen=True)
class Outcome:
    """How a training-outcome test trains: in which precision, from which seeds; and where it
    records what it measured (JUnit XML properties, read by benchmarks/outcomes/spread.py)."""

    precision: str
    record_property: Callable[[str, object], None]

    def seed(self, base: int) -> int:
        return base + SEED_OFFSET

    def args(self, seed: int) -> list[str]:
        """key=value settings for a CLI training run."""
        return [f"precision={self.precision}", f"seed={self.seed(seed)}"]

    def autocast(self) -> contextlib.AbstractContextManager:
        """CPU bfloat16 autocast for "bf16" (none for "fp32"), to wrap a whole training loop.

        Its cast cache is off: with it on, the bfloat16 copy of a weight made at the first
        step is reused for the whole region while the optimiser updates the float32 weight,
        so the layers autocast touches would train on stale copies (the Bahdanau figure's
        attention stayed uniform that way). The engine enters autocast once per step instead.
        """
        return torch.autocast("cpu", torch.bfloat16, enabled=self.precision == "bf16",
                              cache_enabled=False)

    def record(self, name: str, value):
        self.record_property(name, repr(value if isinstance(value, (int, float))
                                        else [round(float(v), 6) for v in value]))
        return value


@pytest.fixture(params=PRECISIONS)
def outcome(request, record_property) -> Outcome:
    return Outcome(request.param, record_property)


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


# A tiny parallel corpus (English → German number words) and a config that trains in seconds.
TINY = """\
data_dir: {data}
src_lang: en
tgt_lang: de
vocab_size: 120
d_model: 32
d_ff: 64
num_heads: 2
num_encoder_layers: 1
num_decoder_layers: 1
dropout: 0.1
schedule: inverse_sqrt
lr: 0.003
warmup: 4
max_tokens: 600
max_steps: 12
valid_every: 4
keep_last: 10
seed: 3
threads: 1
"""


def write_pair(folder, prefix, numbers):
    (folder / f"{prefix}.en").write_text("".join(english(n) + "\n" for n in numbers),
                                         encoding="utf-8")
    (folder / f"{prefix}.de").write_text("".join(german(n) + "\n" for n in numbers),
                                         encoding="utf-8")


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    rng = random.Random(0)
    write_pair(folder, "train", [rng.randrange(10**6) for _ in range(300)])
    write_pair(folder, "val", [rng.randrange(10**6) for _ in range(30)])
    return folder


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
    folder = root / "data"
    folder.mkdir()
    rng = random.Random(0)
    write_pair(folder, "train", [rng.randrange(10**6) for _ in range(300)])
    write_pair(folder, "val", [rng.randrange(10**6) for _ in range(30)])
    config = root / "tiny.yaml"
    config.write_text(TINY.format(data=folder), encoding="utf-8")
    assert main(["train", str(config), "--run-dir", str(root / "run")]) == 0
    return root / "run"


TINY_DEMO = ["max_steps=2", "valid_every=2", "held_out=20", "valid_numbers=10", "d_model=32",
             "d_ff=64", "num_heads=2", "num_encoder_layers=1", "num_decoder_layers=1",
             "examples=1", "threads=1"]


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
    from tests.forecasting.test_cli import write_sine
    from transduce.cli.main import main

    root = tmp_path_factory.mktemp("forecast")
    csv = write_sine(root / "sine.csv")
    assert main(["forecast", "train", f"csv={csv}", "input_length=48", "horizon=12",
                 "model=linear", "max_epochs=1", "--run-dir", str(root / "run")]) == 0
    return root / "run", csv

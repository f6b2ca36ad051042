"""Series, tables and settings the forecasting tests (and a few others) train on."""

import math
from datetime import datetime, timedelta

import numpy as np
import torch

from transduce.cli.main import main
from transduce.data.panel import write_panel
from transduce.tasks.forecasting.config import ForecastConfig
from transduce.tasks.forecasting.data import load_forecast_data
from transduce.tasks.forecasting.task import ForecastTask
from transduce.training.distributed import Session

SINE_YAML = """\
csv: {csv}
input_length: 48
horizon: 12
d_model: 16
num_heads: 2
d_ff: 32
num_encoder_layers: 1
patch_len: 8
stride: 4
label_length: 12
dropout: 0.0
batch_size: 32
lr: 0.003
max_epochs: 4
patience: 0
threads: 1
"""


def write_sine(path, n=600, noise=0.1, seed=0):
    """Two channels: a daily sine with noise, and a slower cosine."""
    rng = np.random.default_rng(seed)
    start = datetime(2021, 1, 1)
    lines = ["date,load,temp"]
    for i in range(n):
        a = math.sin(2 * math.pi * i / 24) + noise * rng.normal()
        b = 3 + math.cos(2 * math.pi * i / 96) + noise * rng.normal()
        lines.append(f"{(start + timedelta(hours=i)).isoformat(sep=' ')},{a:.5f},{b:.5f}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def refused(tmp_path, capsys, settings) -> str:
    """The one-line error of `forecast train` on a sine with ``settings`` (48 steps in, 12
    out), checked to exit non-zero and leave no run directory."""
    csv = write_sine(tmp_path / "sine.csv")
    run = tmp_path / "run"
    assert (
        main(
            [
                "forecast",
                "train",
                f"csv={csv}",
                "input_length=48",
                "horizon=12",
                *settings,
                "--run-dir",
                str(run),
            ]
        )
        != 0
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert not run.exists()
    return err[0]


PANEL_SETTINGS = [
    "layout=long",
    "season=24",
    "horizon=24",
    "input_length=72",
    "d_model=16",
    "d_ff=32",
    "num_heads=2",
    "num_encoder_layers=1",
    "max_epochs=1",
    "batch_size=64",
    "quantiles=0.5,0.9",
    "threads=1",
]


def table(path, lengths=(150, 200, 260), level=50.0):
    ids, steps, values = [], [], []
    noise = np.random.default_rng(0)
    for s, n in enumerate(lengths):
        t = np.arange(1, n + 1)
        ids.append(f"S{s}")
        steps.append(list(t))
        values.append(level + 10 * s + 10 * np.sin(2 * np.pi * t / 24) + noise.normal(0, 1, n))
    path.write_text(write_panel(None, ids, steps, values), encoding="utf-8")
    return path


START = datetime(2021, 1, 1)


def write_shifted(path, n=1500, seed=0):
    """y copies the known covariate k one hour late; a and b are past-observed noise."""
    rng = np.random.default_rng(seed)
    k = rng.normal(size=n + 1)
    a, b = rng.normal(size=n), rng.normal(size=n)
    # y at row i is k[i], the known column at row i is k[i + 1]: y copies k one hour late
    body = [
        f"{START + timedelta(hours=i):%Y-%m-%d %H:%M:%S},{k[i]:.4f},{a[i]:.4f},"
        f"{b[i]:.4f},{k[i + 1]:.4f}"
        for i in range(n)
    ]
    path.write_text("\n".join(["date,y,a,b,k"] + body) + "\n")
    return path, k


SHIFTED_SETTINGS = [
    "model=transformer",
    "input_length=24",
    "horizon=8",
    "label_length=4",
    "d_model=32",
    "d_ff=64",
    "num_heads=4",
    "num_encoder_layers=1",
    "num_decoder_layers=1",
    "dropout=0.0",
    "lr=0.003",
    "batch_size=32",
    "max_epochs=8",
    "threads=1",
]  # seed: 3


def skewed_task(tmp_path, point_loss, seed=2021):
    """A series of exponential draws: its mean and median lie apart (1 and ln 2 before the
    scaler, about 0 and −0.3 after it)."""
    rng = np.random.default_rng(0)
    lines = ["date,load"] + [
        f"2021-01-{1 + i // 24:02d} {i % 24:02d}:00:00,{v:.5f}"
        for i, v in enumerate(rng.exponential(size=720))
    ]
    csv = tmp_path / "skewed.csv"
    csv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cfg = ForecastConfig.of(
        csv=str(csv), input_length=24, horizon=6, batch_size=64, point_loss=point_loss, seed=seed
    )
    cfg.validate("test")
    return ForecastTask(cfg, load_forecast_data(cfg), Session(0, 1, torch.device("cpu"), "fp32"))


def randomised(model):
    """``model`` with every weight moved by noise (so that no weight is at its neutral
    start), in eval mode."""
    import torch

    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)
    return model.eval()

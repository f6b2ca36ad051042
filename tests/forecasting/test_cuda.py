"""Forecasting on a CUDA GPU: every model trains there (bf16 autocast, or fp16 with a gradient
scaler), its run is tested, predicted and plotted on the machine's CPU from the checkpoint, and
a forward pass on the GPU equals the CPU's. CI has no GPU, so these skip there; run them on a
machine with one (`python -m pytest tests/forecasting/test_cuda.py`)."""

import json
import math

import pytest
import torch

from tests.helpers.forecasting import write_sine
from transduce.cli.main import main
from transduce.config import apply_overrides
from transduce.tasks.forecasting.config import ForecastConfig, build_forecaster

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU; none is visible here"
)

SHAPE = [
    "input_length=48",
    "horizon=12",
    "lr=0.003",
    "batch_size=32",
    "max_epochs=3",
    "threads=2",
    "seed=5",
]
LAYERS = ["d_model=16", "d_ff=32", "num_heads=4", "dropout=0.0"]
# each model's own settings; the Transformer models also learn the 0.1/0.5/0.9 quantiles
SETTINGS = {
    "transformer": [
        *LAYERS,
        "label_length=12",
        "num_encoder_layers=1",
        "num_decoder_layers=1",
        "quantiles=0.1,0.5,0.9",
    ],
    "patch": [*LAYERS, "patch_len=8", "stride=4", "quantiles=0.1,0.5,0.9"],
    "channel": [*LAYERS],
    "linear": [],
    "sparse": ["period=24", "max_epochs=20"],  # a linear map learns slowly at this rate
}


def _first_line_with(path, text):
    return next(line for line in path.read_text().splitlines() if text in line)


@pytest.mark.parametrize("precision", ["auto", "fp16"])
@pytest.mark.parametrize("model", list(SETTINGS))
def test_each_model_trains_on_the_gpu_and_its_run_is_used_on_the_cpu(
    tmp_path, capsys, model, precision
):
    if precision == "fp16" and model != "patch":
        pytest.skip("fp16 with a gradient scaler: one model is enough")
    csv = write_sine(tmp_path / "sine.csv", n=800)
    run = tmp_path / "run"
    assert (
        main(
            [
                "forecast",
                "train",
                f"csv={csv}",
                f"model={model}",
                *SHAPE,
                *SETTINGS[model],
                "device=cuda",
                f"precision={precision}",
                "--run-dir",
                str(run),
            ]
        )
        == 0
    )
    # the engine says where it trained: on the GPU, in bf16 (auto on a GPU that has it)
    started = _first_line_with(run / "train.log", "parameters;")
    wanted = "bf16" if precision == "auto" and torch.cuda.is_bf16_supported() else "fp16"
    assert "cuda" in started and wanted in started, started
    assert main(["forecast", "test", str(run)]) == 0
    result = json.loads((run / "test_results.json").read_text())
    assert math.isfinite(result["mse"]) and result["mse"] < 0.5, result  # the sine is learnt
    capsys.readouterr()
    assert main(["forecast", "predict", str(run), "--csv", str(csv)]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert len(rows) == 1 + 12 and all(math.isfinite(float(v)) for v in rows[-1].split(",")[1:])
    assert main(["forecast", "plot", str(run), "--future", "--csv", str(csv)]) == 0
    assert (run / "forecast_future.png").is_file()


@pytest.mark.parametrize("model", list(SETTINGS))
def test_a_forward_pass_on_the_gpu_equals_the_cpus(model, monkeypatch):
    """The same weights in fp32 (TF32 off) give the same forecast on both devices."""
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    cfg = apply_overrides(ForecastConfig(), [f"model={model}", *SHAPE, *SETTINGS[model]])
    torch.manual_seed(0)
    net = build_forecaster(cfg, 2).eval()
    with torch.no_grad():
        for p in net.parameters():  # away from the initial values, which may be symmetric
            p.add_(torch.randn_like(p) * 0.1)
    x = torch.randn(4, cfg.input_length, 2) * 3 + 1
    x_time = torch.rand(4, cfg.input_length, 4)
    y_time = torch.rand(4, cfg.horizon, 4)
    with torch.no_grad():
        on_cpu, _ = net(x, x_time, y_time)
        on_gpu, _ = net.cuda()(x.cuda(), x_time.cuda(), y_time.cuda())
    assert on_gpu.device.type == "cuda"
    torch.testing.assert_close(on_gpu.cpu(), on_cpu, atol=1e-4, rtol=1e-4)

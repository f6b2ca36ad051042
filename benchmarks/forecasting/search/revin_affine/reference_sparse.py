"""Diagnostic: SparseTSF trained the way its reference code trains, on our ETTh1 windows.

Adam at lr 0.02, multiplied by 0.9 after every epoch from the fourth (lr_decay_after=3); batch 256, shuffled,
the last partial training batch dropped; at most 30 epochs, stopping after 5 without a
lower validation MSE and keeping the best; float32, one thread. The model is ours
(`SparseForecaster`), normalised either as the paper does (the window's mean subtracted and
added back: `mean`) or by our RevIN with its learned scale and shift (`affine`). Prints the
best validation MSE and the test MSE on every test window. It reads test: it checks our
reproduction against the paper's published figures and chooses nothing.

    python benchmarks/forecasting/search/revin_affine/reference_sparse.py \\
        PATH/ETTh1.csv INPUT_LENGTH HORIZON SEED mean|affine
"""

from __future__ import annotations

import copy
import sys

import torch
from torch import nn

from transduce.nn.forecasting.baselines import SparseForecaster
from transduce.tasks.forecasting.config import ForecastConfig
from transduce.tasks.forecasting.data import load_forecast_data


class MeanNormalised(nn.Module):
    """The paper's normalisation: subtract the window's mean, forecast, add it back."""

    def __init__(self, inner: SparseForecaster) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x):
        mean = x.mean(1, keepdim=True)
        return self.inner(x - mean)[0][..., 0] + mean


class Affine(nn.Module):
    def __init__(self, inner: SparseForecaster) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)[0][..., 0]


def main() -> None:
    if len(sys.argv) != 6 or sys.argv[5] not in ("mean", "affine"):
        raise SystemExit(__doc__.strip().splitlines()[-2].strip() + " ...: see the docstring")
    csv, length, horizon, seed, variant = sys.argv[1], *map(int, sys.argv[2:5]), sys.argv[5]
    torch.set_num_threads(1)
    data = load_forecast_data(ForecastConfig.of(csv=csv, model="sparse", input_length=length,
                                             horizon=horizon, period=24))
    channels = data.series.values.shape[1]
    torch.manual_seed(seed)
    inner = SparseForecaster(input_length=length, horizon=horizon, period=24, channels=channels,
                             revin=variant == "affine")
    model = MeanNormalised(inner) if variant == "mean" else Affine(inner)
    optimiser = torch.optim.Adam(model.parameters(), lr=0.02)
    train = torch.utils.data.DataLoader(data.windows["train"], batch_size=256, shuffle=True,
                                        drop_last=True,
                                        generator=torch.Generator().manual_seed(seed))

    def mse(split: str) -> float:
        model.eval()
        total = count = 0.0
        with torch.no_grad():
            for x, y, *_ in data.loader(split, 1024):
                total += ((model(x.float()) - y.float()) ** 2).sum().item()
                count += y.numel()
        model.train()
        return total / count

    best, best_state, waited = float("inf"), None, 0
    for epoch in range(1, 31):
        for x, y, *_ in train:
            optimiser.zero_grad()
            ((model(x.float()) - y.float()) ** 2).mean().backward()
            optimiser.step()
        score = mse("val")
        if score < best:
            best, best_state, waited = score, copy.deepcopy(model.state_dict()), 0
        else:
            waited += 1
            if waited == 5:
                break
        for group in optimiser.param_groups:  # its lradj "type3", given epochs done
            group["lr"] = 0.02 * 0.9 ** max(epoch - 3, 0)
    model.load_state_dict(best_state)
    print(f"input {length} horizon {horizon} seed {seed} {variant}: {epoch} epochs, "
          f"validation MSE {best:.4f}, test MSE {mse('test'):.4f}")


if __name__ == "__main__":
    main()

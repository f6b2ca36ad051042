"""`transduce forecast blend`: one forecast from several trained runs, a weighted mean whose
weights are chosen on the validation split.

Runs of different models (a patch Transformer, a linear map, an encoder–decoder) make
different errors; their mean often has a lower error than the best of them (Bates and
Granger 1969). The weights are searched on a grid over the simplex (every weight a multiple
of ``step``, the weights summing to 1, a run alone included), and the grid point of lowest
validation MSE is kept, so that a run that does not help gets weight 0. The runs must
forecast the same columns of the same CSV over the same horizon; their input lengths may
differ (each reads the last rows of the longest window). The folder ``blend_runs`` writes
loads like a run (:func:`load_blend`): ``forecast test``, ``predict``, ``plot`` and
``transduce.load`` take it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from transduce import runs
from transduce.errors import UserError
from transduce.io import check_writable
from transduce.nn.forecasting.blend import Blend, longest_input
from transduce.tasks.forecasting.evaluation import evaluate
from transduce.tasks.forecasting.rundir import load_run


def simplex(count: int, step: float) -> list[tuple[float, ...]]:
    """Every weight vector of ``count`` multiples of ``step`` that sums to 1, the runs alone
    first (in their order), then the rest in lexicographic order from the first run's
    largest share down."""
    parts = round(1 / step) if 0 < step <= 1 else 0
    if parts < 1 or abs(parts * step - 1) > 1e-9:
        raise UserError(f"--step {step:g} must divide 1 (e.g. 0.5, 0.25, 0.1)")

    def split(total: int, slots: int):
        if slots == 1:
            yield (total,)
            return
        for first in range(total, -1, -1):
            for rest in split(total - first, slots - 1):
                yield (first, *rest)

    grid = [tuple(k / parts for k in point) for point in split(parts, count)]
    alone = [point for point in grid if max(point) == 1]
    return alone + [point for point in grid if max(point) < 1]


@torch.no_grad()
def point_forecasts(
    model: nn.Module, data, split: str, length: int, batch_size: int = 256
) -> np.ndarray:
    """The point forecasts (n, H, C) of ``model`` reading the last ``length`` steps of each
    of ``data``'s windows of ``split``."""
    alone = Blend(members=[model], input_lengths=[length], weights=[1.0], quantiles=False)
    return np.concatenate(
        [
            alone(x, x_time, y_time)[0][..., 0].double().numpy()
            for x, _, x_time, y_time in data.loader(split, batch_size)
        ]
    )


def truth(data, split: str) -> np.ndarray:
    return np.concatenate([y.double().numpy() for _, y, _, _ in data.loader(split, 1024)])


def _check_same_data(run_dirs: list[str], loaded: list) -> int:
    """The index of the run with the longest input, once every run is known to forecast
    the same values on the same split as the first; else a UserError naming the run."""
    first_cfg, _, first_data = loaded[0]
    for run, (_, _, data) in zip(run_dirs, loaded):
        if data.windows["val"].scaling:
            raise UserError(
                f"{run}: its windows are scaled one by one (a table of series), and a blend "
                "feeds every member the longest member's window; train one run with "
                "members=N for an ensemble of such runs"
            )
    for run, (cfg, _, data) in zip(run_dirs[1:], loaded[1:]):
        differs = next(
            (
                what
                for what, mine, first in (
                    ("another horizon", cfg.horizon, first_cfg.horizon),
                    ("other forecast columns", data.target_columns, first_data.target_columns),
                    ("other input columns", data.channels, first_data.channels),
                    ("other training rows", data.fingerprint, first_data.fingerprint),
                )
                if mine != first
            ),
            None,
        )
        if differs:
            raise UserError(
                f"{run}: has {differs} than {run_dirs[0]}; blend runs trained on "
                "the same CSV, columns and horizon"
            )
    longest = longest_input([cfg for cfg, _, _ in loaded])
    data = loaded[longest][2]
    for run, (_, _, own) in zip(run_dirs, loaded):
        if any(len(own.windows[s]) != len(data.windows[s]) for s in ("val", "test")):
            raise UserError(
                f"{run}: its validation or test windows differ from "
                f"{run_dirs[longest]}'s (another split?); blend runs trained on "
                "the same split"
            )
    return longest


def blend_runs(
    run_dirs: list[str],
    out: str | Path,
    step: float = 0.25,
    drop_last: tuple[int, ...] = (),
    equal: bool = False,
) -> dict:
    """Choose the weights of ``run_dirs``' forecasts on validation, score the blend on test,
    and write OUT/blend.json; returns its record. With ``equal``, the weights are fixed at
    1/n each and nothing is chosen: the mean of the same pipeline trained from several
    seeds (a bag). A member may itself be a blend folder.

    Raises:
        UserError: fewer than two runs, or runs that do not forecast the same values
            (another CSV, other columns or another horizon), named by their directory.
    """
    if len(run_dirs) < 2:
        raise UserError("forecast blend needs two or more run directories")
    n = len(run_dirs)
    # each run alone first, as simplex() orders them, then what may be kept; a bad --step
    # fails before any run is loaded
    grid = simplex(n, 1.0) + [(1 / n,) * n] if equal else simplex(n, step)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--output {out}: a file is there; give a folder for blend.json")
    if (out / runs.CONFIG).exists() or runs.checkpoint_dir(out).exists():
        raise UserError(f"--output {out}: a run directory; give the blend a folder of its own")
    check_writable(out, "--output")  # a file above it, or a folder this process may not write
    loaded = [load_run(run) for run in run_dirs]  # (cfg, model, data) each
    longest = _check_same_data(run_dirs, loaded)
    first_cfg, data = loaded[0][0], loaded[longest][2]  # its windows hold every member's input
    lengths = [cfg.input_length for cfg, _, _ in loaded]
    val_truth = truth(data, "val")
    forecasts = [
        point_forecasts(model, data, "val", length)
        for (_, model, _), length in zip(loaded, lengths)
    ]

    def val_mse(weights) -> float:
        blended = sum(w * f for w, f in zip(weights, forecasts) if w)
        return float(((blended - val_truth) ** 2).mean())

    scored = [(val_mse(weights), index) for index, weights in enumerate(grid)]
    best_mse, best = scored[-1] if equal else min(scored)
    weights = list(grid[best])
    chosen = [i for i, w in enumerate(weights) if w]
    levels = {tuple(loaded[i][0].quantiles) for i in chosen}
    quantiles = levels.pop() if len(levels) == 1 else ()
    model = Blend(
        members=[m for _, m, _ in loaded],
        input_lengths=lengths,
        weights=weights,
        quantiles=bool(quantiles),
    ).eval()
    test = evaluate(model, data, "test", drop_last=drop_last, quantiles=quantiles)
    record = {
        "runs": [str(Path(run).resolve()) for run in run_dirs],
        "models": [getattr(model, "label", cfg.model.name) for cfg, model, _ in loaded],
        "input_lengths": lengths,
        "horizon": first_cfg.horizon,
        "step": None if equal else step,
        "equal": equal,
        "weights": weights,
        "val_mse": best_mse,
        "val_mse_alone": [s for s, _ in scored[:n]],
        "quantiles": list(quantiles),
        "test": test,
    }
    out.mkdir(parents=True, exist_ok=True)
    runs.write_json(out, runs.BLEND, record)
    return record

"""A forecasting run directory as a whole: its model loaded (a checkpoint with its
calibration, or a blend of runs), tested on its test split, and calibrated on its
validation split."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import torch

from transduce import runs
from transduce.config import apply_mapping
from transduce.data.windows import Scaler
from transduce.errors import UserError
from transduce.evaluation.quantiles import band_coverage, intervals
from transduce.io import write_text
from transduce.nn.forecasting.blend import Blend, longest_input
from transduce.runs import is_blend
from transduce.tasks.forecasting.calibration import (
    Calibrated,
    apply_saved,
    move,
    outputs,
    shifts_for,
)
from transduce.tasks.forecasting.config import ForecastConfig, build_forecaster
from transduce.tasks.forecasting.evaluation import evaluate, run_data


def load_model(run_dir: str | Path, checkpoint: str = runs.BEST, calibrated: bool = True):
    """The config, model (eval mode) and training-row scaler of a trained run; with
    ``calibrated``, its quantiles moved by the run's calibration.json when one was fitted
    to this checkpoint (see :mod:`transduce.tasks.forecasting.calibration`). A folder that
    ``forecast blend`` wrote gives its blend (:func:`load_blend`).
    """
    if is_blend(run_dir):
        return load_blend(run_dir, calibrated)
    return load_checkpoint_model(run_dir, checkpoint, calibrated)[:4]


def load_checkpoint_model(
    run_dir: str | Path, checkpoint: str = runs.BEST, calibrated: bool = True
):
    """:func:`load_model`'s config, model, scaler and columns, and the checkpoint's step."""
    if not Path(run_dir).is_dir():
        raise UserError(
            f"{run_dir}: no such run directory; give one that forecast train "
            "--run-dir (or forecast blend --output) wrote"
        )
    path = runs.checkpoint_dir(run_dir) / checkpoint
    state = runs.load_checkpoint(path, "forecast")
    try:
        cfg = apply_mapping(ForecastConfig(), state["config"], str(path))
        scaler = state["extra"]["scaler"]
        columns = list(scaler["columns"])
    except (KeyError, TypeError, AttributeError) as error:
        raise UserError(
            f"{path}: not a forecast checkpoint transduce wrote (no {error} in its record)"
        ) from None
    weights = state.get("model")
    if (
        cfg.model.name == "linear"
        and cfg.model.revin
        and isinstance(weights, dict)
        and "revin.weight" not in weights
    ):
        # a linear run trained before the model honoured revin: it had none
        cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, revin=False))
    model = runs.build_model(path, state, lambda _: build_forecaster(cfg, len(columns)))
    step = int(state.get("step", -1))
    if calibrated:
        model = apply_saved(run_dir, model, step, cfg.quantiles, cfg.horizon)
    return (
        cfg,
        model.eval(),
        Scaler(scaler["mean"].numpy(), scaler["std"].numpy()),
        scaler["columns"],
        step,
    )


def load_run(run_dir: str | Path, calibrated: bool = True):
    """:func:`load_model` plus the run's data, checked to be what it was trained on."""
    cfg, model, scaler, columns = load_model(run_dir, calibrated=calibrated)
    return cfg, model, run_data(run_dir, cfg, scaler, columns)


def evaluate_run(run_dir: str | Path, drop_last: tuple[int, ...] = ()) -> dict:
    """Test-split MSE/MAE of the best checkpoint (and of the reference code's windows, and
    the ρ-risks and interval coverage of a probabilistic run, see :func:`evaluate`); also
    written to RUN_DIR/test_results.json. A calibrated run's quantiles are scored as
    calibrated, and also as trained (under ``"uncalibrated"``)."""
    cfg, model, data = load_run(run_dir)
    result = {
        "csv": cfg.csv,
        "model": getattr(model, "label", cfg.model.name),
        "input_length": cfg.input_length,
        "horizon": cfg.horizon,
        "quantiles": list(cfg.quantiles),
        **evaluate(model, data, "test", drop_last=drop_last, quantiles=cfg.quantiles),
    }
    result["calibrated"] = isinstance(model, Calibrated)
    if result["calibrated"]:
        raw = evaluate(model.model, data, "test", quantiles=cfg.quantiles)
        result["uncalibrated"] = {"rho_risk": raw["rho_risk"], "coverage": raw["coverage"]}
    runs.write_json(run_dir, runs.TEST_RESULTS, result)
    return result


def load_blend(blend_dir: str | Path, calibrated: bool = True):
    """The config, model (eval mode), scaler and columns of a blend folder, as
    :func:`~transduce.tasks.forecasting.evaluation.load_model` gives them for a run: its runs,
    loaded from where blend.json names them, weighted as chosen on validation. The config
    is that of the run with the longest input, its quantiles those of the blend (none where
    the runs given weight forecast different levels).

    Raises:
        UserError: a blend.json that is not one ``forecast blend`` wrote, or a run it names
            that is no longer there.
    """
    path = Path(blend_dir) / runs.BLEND
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        run_dirs, weights = [str(r) for r in record["runs"]], [float(w) for w in record["weights"]]
        quantiles = tuple(float(q) for q in record["quantiles"])
        if len(run_dirs) != len(weights) or len(run_dirs) < 2:
            raise ValueError("one weight per run")
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UserError(
            f"{path}: not a blend.json that forecast blend wrote ({error}); blend the runs again"
        ) from None
    for run in run_dirs:
        if not Path(run).is_dir():
            raise UserError(
                f"{path}: the run {run} it blends is not there; put it back or blend the runs again"
            )
    loaded = [load_model(run, calibrated=calibrated) for run in run_dirs]
    lengths = [cfg.input_length for cfg, _, _, _ in loaded]
    cfg, _, scaler, columns = loaded[longest_input([c for c, _, _, _ in loaded])]
    label = "blend of " + " + ".join(
        f"{w:g} {c.model.name}" for (c, _, _, _), w in zip(loaded, weights) if w
    )
    model = Blend(
        members=[m for _, m, _, _ in loaded],
        input_lengths=lengths,
        weights=weights,
        quantiles=bool(quantiles),
        label=label,
    )
    return (
        _with_quantiles(cfg, quantiles, [c for c, _, _, _ in loaded]),
        model.eval(),
        scaler,
        columns,
    )


def _with_quantiles(cfg: ForecastConfig, quantiles: tuple[float, ...], configs: list):
    """``cfg`` forecasting ``quantiles``: a blend's levels are those of the runs it gives
    weight to, and a baseline's config (which has none) takes such a run's model."""
    if tuple(cfg.quantiles) == tuple(quantiles):
        return cfg
    if hasattr(cfg.model, "quantiles"):
        return dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, quantiles=quantiles))
    donor = next(c for c in configs if tuple(c.quantiles) == tuple(quantiles))
    return dataclasses.replace(cfg, model=donor.model)


def calibrate_run(run_dir: str | Path, data=None) -> dict:
    """Fit the shifts of a run's best checkpoint on its validation split and write them to
    RUN_DIR/calibration.json. Returns that record, with the validation coverage before and
    after. ``data``: the run's ForecastData when the caller has it loaded already."""
    if is_blend(run_dir):
        raise UserError(
            f"{run_dir}: a blend; calibrate each of its runs (forecast calibrate "
            "RUN), then blend them again"
        )
    cfg, model, scaler, columns, step = load_checkpoint_model(run_dir, calibrated=False)
    if data is None:
        data = run_data(run_dir, cfg, scaler, columns)
    if not intervals(list(cfg.quantiles)):
        raise UserError(
            f"{run_dir}: the run's quantiles {list(cfg.quantiles)} bound no "
            "central band (such as 0.1 with 0.9); there is nothing to calibrate"
        )
    q, y, sigma = outputs(model, data)  # one pass over the validation windows
    shifts = shifts_for(q, y, sigma, cfg.quantiles)
    moved = move(q, torch.from_numpy(shifts).float(), sigma)
    record = {
        "step": step,
        "split": "val",
        "levels": list(cfg.quantiles),
        "windows": len(y),
        "coverage_before": band_coverage(q, y, cfg.quantiles),
        "coverage_after": band_coverage(moved, y, cfg.quantiles),
        "shifts": [[round(float(s), 6) for s in row] for row in shifts],
    }
    path = Path(run_dir) / runs.CALIBRATION
    write_text(path, json.dumps(record, indent=1) + "\n")
    return {**record, "path": str(path)}


def check_finite(forecast, read, name: str):
    """``forecast`` (an array) if every number of it is finite; else a UserError naming
    ``name`` and the largest magnitude among ``read``, the values the model was given: they
    overflowed its float32 arithmetic (a square, a sum) on the way to the forecast."""
    if np.isfinite(forecast).all():
        return forecast
    read = np.asarray(read, np.float64)
    peak = float(np.nanmax(np.abs(read))) if np.isfinite(read).any() else float("nan")
    raise UserError(
        f"{name}: values up to {peak:.3g} overflow the model's float32 arithmetic and its "
        "forecast is not finite; give the series in smaller units (divide by a power of ten)"
    )

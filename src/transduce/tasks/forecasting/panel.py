"""Many series, one model: a global forecaster trained on windows of every series of a long
table (``layout=long``; see :mod:`transduce.data.panel`).

- **Windows.** Every (input, horizon) window of every series, the last ``horizon`` steps of
  each series held out: they validate. A series shorter than a window is padded on the left
  with its first value.
- **Scale per series window, as DeepAR does.** With ``scaling=mean`` each window is divided
  by the mean absolute value of its own input steps (DeepAR scales by the mean of its
  conditioning range), and its forecast multiplied back, so series of any level train one
  model; with ``scaling=log`` (positive series) it becomes log y less the mean log y of its
  input steps, and the forecast is exp'd back: an error then weighs by its ratio to the
  level, as sMAPE and MASE weigh it, and a quantile of log y is exp'd to the same quantile
  of y. A model's own RevIN (per window mean and deviation) may still run inside.
- **Features.** For dated series, the calendar; for integer steps with ``season`` m, the
  phase t mod m and the cycle count (t div m) mod 7 (hour of day and day of week for hourly
  series). Then the ``known`` covariate columns, z-scored by their training mean and
  deviation (stored with the checkpoint); forecasting wants their next ``horizon`` rows.
- **Validation.** Every series' last horizon from the input before it: MAE on the scaled
  values chooses the best checkpoint, MSE and sMAPE (on the original scale) are logged.
"""

from __future__ import annotations

# size: a global run end to end (its windows and their scaling, the task that trains on them,
# and forecasting and scoring through the same windows), so that the scaling and the known
# covariates are put on and taken off in one place
import dataclasses
import math
from pathlib import Path

import numpy as np
import torch

from transduce import runs
from transduce.data.calendar import infer_frequency, next_dates
from transduce.data.panel import Panel, read_panel, step_texts
from transduce.data.windows import CALENDAR_FEATURES, Scaler, calendar_features
from transduce.errors import UserError
from transduce.evaluation import m4
from transduce.tasks.forecasting.config import EXTENDABLE, ForecastConfig, build_forecaster
from transduce.tasks.forecasting.rundir import check_finite, load_checkpoint_model
from transduce.tasks.forecasting.task import ForecastTask
from transduce.training.distributed import Session
from transduce.training.train import train_task


def step_features(steps: list, dated: bool, season: int) -> np.ndarray:
    """(T, CALENDAR_FEATURES) features of each step, in [-0.5, 0.5]: the calendar of dates,
    or the phase in the ``season`` and the cycle count mod 7 of integer steps (zeros without a
    season), in the calendar's columns."""
    if dated:
        return calendar_features(steps)
    t = np.asarray(steps, np.int64)
    features = np.zeros((len(t), CALENDAR_FEATURES), np.float32)
    if season > 1:
        features[:, 0] = (t % season) / (season - 1) - 0.5
        features[:, 1] = ((t // season) % 7) / 6 - 0.5
    return features


def features(panel: Panel, s: int, cfg: ForecastConfig, known: Scaler | None) -> np.ndarray:
    """(T, 4 + K) features of series ``s``'s steps: :func:`step_features`, then its
    ``known`` covariates z-scored by ``known`` (their training mean and deviation)."""
    steps = step_features(panel.steps[s], panel.dated, cfg.layout.season)
    names = cfg.known_list()
    if not names:
        return steps
    columns = np.stack([panel.known[c][s] for c in names], 1)
    return np.concatenate([steps, known.transform(columns)], 1)


def known_scaler(panel: Panel, cfg: ForecastConfig) -> Scaler | None:
    """The known covariates' mean and deviation over every row of ``panel``."""
    names = cfg.known_list()
    if not names:
        return None
    return Scaler.fit(np.stack([np.concatenate(panel.known[c]) for c in names], 1))


def next_steps(steps: list, dated: bool, horizon: int) -> list:
    """The ``horizon`` steps after a series' last: by its calendar for dates (month ends
    stay month ends), by its even spacing for integer steps (read_panel checked both)."""
    if dated:
        if len(steps) < 2:
            raise UserError("a dated series of one row has no spacing to forecast by")
        return next_dates(steps, horizon, infer_frequency(steps))
    gap = steps[-1] - steps[-2] if len(steps) > 1 else 1
    return [steps[-1] + gap * (k + 1) for k in range(horizon)]


class PanelWindows:
    """Windows of a panel, scaled per window: ``self[i]`` is (x (L, 1), y (H, 1), x_time
    (L, 4), y_time (H, 4)) as tensors; :meth:`restore` puts forecasts back in units."""

    def __init__(self, panel: Panel, cfg: ForecastConfig, starts, known: Scaler | None = None):
        self.panel, self.cfg, self.starts = panel, cfg, starts
        self.known = known
        self.features = [features(panel, s, cfg, known) for s in range(len(panel.ids))]

    def __len__(self) -> int:
        return len(self.starts)

    def window(self, i: int):
        s, start = (int(n) for n in self.starts[i])
        L, H = self.cfg.input_length, self.cfg.horizon
        values, feats = self.panel.values[s], self.features[s]
        idx = np.clip(np.arange(start, start + L + H), 0, len(values) - 1)
        v, f = values[idx], feats[idx]
        if self.cfg.layout.scaling == "log":
            logged = np.log(v)
            level = float(logged[:L].mean())
            return logged - level, f, level
        # summed in float64: values near float32's limit overflowed a float32 sum to inf
        scale = float(np.abs(v[:L]).mean(dtype=np.float64)) or 1.0
        return v / scale, f, scale

    def restore(self, values: np.ndarray, scales: np.ndarray) -> np.ndarray:
        """``values`` on the windows' common scale back in their series' units: ``scales``
        are what :meth:`batch` gave, shaped to broadcast against ``values``."""
        if self.cfg.layout.scaling == "log":
            return np.exp(values + scales)
        return values * scales

    def batch(self, indices) -> tuple:
        """(x, y, x_time, y_time) of the windows ``indices``, stacked, and (B,) each one's
        scale (what it was divided by, or for ``scaling=log`` the mean log subtracted)."""
        cut = [self.window(int(i)) for i in indices]
        L = self.cfg.input_length
        v = torch.from_numpy(np.stack([c[0] for c in cut]))[..., None]  # (B, L + H, 1)
        f = torch.from_numpy(np.stack([c[1] for c in cut]))  # (B, L + H, 4)
        return v[:, :L], v[:, L:], f[:, :L], f[:, L:], np.array([c[2] for c in cut])

    def __getitem__(self, i: int):
        v, f, _ = self.window(i)
        L = self.cfg.input_length
        return (
            torch.from_numpy(v[:L, None].copy()),
            torch.from_numpy(v[L:, None].copy()),
            torch.from_numpy(f[:L].copy()),
            torch.from_numpy(f[L:].copy()),
        )


def check_scaling(
    panel: Panel, cfg: ForecastConfig, source, remedy: str = "train with scaling=mean"
) -> None:
    """Raise a UserError where ``scaling=log`` meets a value that is not positive."""
    if cfg.layout.scaling != "log":
        return
    for name, values in zip(panel.ids, panel.values):
        if len(values) and values.min() <= 0:
            raise UserError(
                f"{source}: series {name} has a value {values.min():g} <= 0, and "
                f"scaling=log takes the log of every value; {remedy}"
            )


def training_starts(panel: Panel, L: int, H: int) -> np.ndarray:
    """(N, 2) rows of (series, start): every window whose horizon ends before each series'
    last ``H`` steps (left-padded windows included from the series' first step as the first
    target). An array, not a list of tuples: M4's Monthly and Daily hold some 10 million."""
    parts = []
    for s, values in enumerate(panel.values):
        usable = len(values) - H  # the last H validate
        starts = np.arange(1 - L, usable - L - H + 1, dtype=np.int64)
        parts.append(np.stack([np.full_like(starts, s), starts], 1))
    return np.concatenate(parts) if parts else np.zeros((0, 2), dtype=np.int64)


def validation_starts(panel: Panel, L: int, H: int) -> list[tuple[int, int]]:
    return [(s, len(v) - H - L) for s, v in enumerate(panel.values)]


class PanelTask(ForecastTask):
    """:class:`ForecastTask`'s loss and optimiser over the windows of every series; the
    best checkpoint is the one of lowest validation MAE on the scaled values."""

    kind, metric, higher_is_better, unit = "forecast", "val_mae", False, "values"

    def __init__(self, cfg: ForecastConfig, panel: Panel, session: Session) -> None:
        self.cfg, self.panel, self.session = cfg, panel, session
        L, H = cfg.input_length, cfg.horizon
        short = [i for i, v in zip(panel.ids, panel.values) if len(v) < H + 2]
        if short:
            raise UserError(
                f"{cfg.csv}: series {', '.join(short[:3])} hold fewer than "
                f"horizon + 2 = {H + 2} steps; a global run validates on each "
                "series' last horizon"
            )
        check_scaling(panel, cfg, cfg.csv)
        self.known = known_scaler(panel, cfg)
        starts = training_starts(panel, L, H)
        if not len(starts):
            longest = max(len(v) for v in panel.values)
            raise UserError(
                f"{cfg.csv}: no series is long enough to train on: a training window needs "
                f"2 × horizon + 1 = {2 * H + 1} steps (its own horizon, then the last horizon, "
                f"held out to validate), and the longest series has {longest}; give longer "
                "series or a shorter horizon"
            )
        self.windows = PanelWindows(panel, cfg, starts, self.known)
        self.valid = PanelWindows(panel, cfg, validation_starts(panel, L, H), self.known)

    def build_model(self):
        return build_forecaster(self.cfg, 1 + len(self.cfg.known_list()))

    @torch.no_grad()
    def validate(self, model) -> dict:
        model.eval()
        device = next(model.parameters()).device
        errors, smape = [], []
        for chunk in np.array_split(np.arange(len(self.valid)), max(1, len(self.valid) // 256)):
            x, y, xt, yt, scales = self.valid.batch(chunk)
            forecast, _ = model(x.to(device), xt.to(device), yt.to(device))
            point = forecast[..., 0, 0].float().cpu().numpy()  # (B, H)
            truth = y[..., 0].numpy()
            errors.append(point - truth)
            smape.append(
                m4.smape_terms(
                    self.valid.restore(point, scales[:, None]),
                    self.valid.restore(truth, scales[:, None]),
                )
            )
        error = np.concatenate(errors)
        return {
            "val_mae": round(float(np.abs(error).mean()), 6),
            "val_mse": round(float((error**2).mean()), 6),
            "val_smape": round(float(np.concatenate(smape).mean()), 4),
        }

    def _scaler(self) -> dict:
        """The checkpoint's scaler: y is scaled per window (mean 0, std 1 here), the known
        covariates by their training mean and deviation."""
        names = self.cfg.known_list()
        mean = [0.0, *(self.known.mean if names else ())]
        std = [1.0, *(self.known.std if names else ())]
        return {
            "mean": torch.tensor(mean, dtype=torch.float64),
            "std": torch.tensor(std, dtype=torch.float64),
            "columns": ["y", *names],
        }

    def record(self) -> dict:
        return {
            "model_config": dataclasses.asdict(self.cfg),
            "data": self.panel.fingerprint(),
            "extra": {
                "scaler": self._scaler(),
                "panel": {"series": len(self.panel.ids), "dated": self.panel.dated},
            },
        }


def train_panel(cfg: ForecastConfig, run_dir: str | Path) -> dict:
    """Train (or resume) a global run on the long table ``cfg.csv``."""
    cfg.validate("forecast config")
    panel = read_panel(cfg.csv, known=tuple(cfg.known_list()))  # bad input fails here
    engine, metrics = train_task(
        lambda session, log: PanelTask(cfg, panel, session), cfg, run_dir, EXTENDABLE
    )
    return {**metrics, "best_val_mae": engine.best}


def is_global(run_dir: str | Path) -> bool:
    """Whether ``run_dir`` holds a global run (``layout: long``)."""
    path = Path(run_dir) / runs.CONFIG
    if not path.is_file():
        return False
    try:
        return runs.read_config(run_dir, ForecastConfig).layout.name == "long"
    except UserError:
        return False


@torch.no_grad()
def forecast_panel(
    run_dir: str | Path,
    history: Panel | str | Path,
    ids: list[str] | None = None,
    future: Panel | str | Path | None = None,
) -> dict:
    """Each series' next ``horizon`` steps after its last row in ``history`` (a long table
    or its path; by default every series, else those of ``ids``): ``{"steps": {id: [...]},
    "forecast": {id: (H, 1 + Q) array}, "quantiles": levels}`` in the series' own units.
    A run that reads ``known`` covariates takes their values at those steps from ``future``
    (a long table, ``y`` optional)."""
    cfg, model, scaler, _, _ = load_checkpoint_model(run_dir)
    if cfg.layout.name != "long":
        raise UserError(
            f"{run_dir}: not a global run (layout: {cfg.layout.name}); predict it with "
            "forecast predict --csv"
        )
    names = tuple(cfg.known_list())
    panel = history if isinstance(history, Panel) else read_panel(history, known=names)
    chosen = [panel.index(i) for i in ids] if ids else list(range(len(panel.ids)))
    check_scaling(
        panel,
        cfg,
        "the history" if isinstance(history, Panel) else history,
        f"{run_dir} was trained with scaling=log: give a history of positive values",
    )
    known = Scaler(scaler.mean[1:], scaler.std[1:]) if names else None
    if names and future is None:
        raise UserError(
            f"{run_dir} reads the known covariates {', '.join(names)}: give their "
            f"values at each series' next {cfg.horizon} steps (forecast predict "
            "or serve --known FILE)"
        )
    if names and not isinstance(future, Panel):
        future = read_panel(future, known=names, target=False)
    L, H = cfg.input_length, cfg.horizon
    windows = PanelWindows(panel, cfg, [(s, len(panel.values[s]) - L) for s in chosen], known)
    steps, out = {}, {}
    for part in np.array_split(np.arange(len(chosen)), max(1, math.ceil(len(chosen) / 256))):
        rows = [int(i) for i in part]
        x, _, xt, _, scales = windows.batch(rows)
        ahead = []
        for i in rows:
            s = chosen[i]
            later = next_steps(panel.steps[s], panel.dated, H)
            steps[panel.ids[s]] = later
            feats = step_features(later, panel.dated, cfg.layout.season)
            if names:
                feats = np.concatenate(
                    [feats, known.transform(known_ahead(future, panel.ids[s], later, names))], 1
                )
            ahead.append(torch.from_numpy(feats))
        forecast, _ = model(x, xt, torch.stack(ahead))  # (B, H, 1, 1 + Q)
        values = forecast[:, :, 0].double().numpy()  # (B, H, 1 + Q)
        for i, v, scale in zip(rows, values, scales):
            series = panel.ids[chosen[i]]
            out[series] = check_finite(
                windows.restore(v, scale), panel.values[chosen[i]][-L:], f"series {series}"
            )
    return {"steps": steps, "forecast": out, "quantiles": list(cfg.quantiles), "dated": panel.dated}


def check_steps(source, truth: Panel, forecast_steps: dict, horizon: int) -> None:
    """A UserError unless each series of ``truth`` starts with the steps its forecast is for:
    a test table of other dates (shifted a year, integer steps for a dated run) would be
    scored against the wrong values."""
    if truth.dated != (bool(forecast_steps) and _dated(forecast_steps)):
        kind = "dates" if truth.dated else "integer steps"
        raise UserError(
            f"{source}: its ds column holds {kind}, and the run forecasts "
            f"{'integer steps' if truth.dated else 'dates'}; give the table of the forecast's steps"
        )
    for series, steps in zip(truth.ids, truth.steps):
        wanted = forecast_steps[series][:horizon]
        if list(steps[:horizon]) != list(wanted):
            first = next(k for k, (a, b) in enumerate(zip(steps, wanted)) if a != b)
            given, due = step_texts([steps[first], wanted[first]])
            raise UserError(
                f"{source}: series {series} starts at ds {given} where its forecast is for "
                f"{due}; give each series' next {horizon} steps after its history"
            )


def _dated(steps: dict) -> bool:
    return not isinstance(next(iter(steps.values()))[0], (int, np.integer))


def known_ahead(future: Panel, series: str, later: list, names: tuple[str, ...]) -> np.ndarray:
    """(H, K) known covariates of ``series`` at the steps ``later`` from ``future``."""
    H, source = len(later), "the future rows"
    if series not in future.ids:
        raise UserError(
            f"{source}: no rows of series {series!r}; forecasting it needs "
            f"{', '.join(names)} at its next {H} steps"
        )
    s = future.index(series)
    found = future.steps[s]
    at = found.index(later[0]) if later[0] in found else -1
    if at < 0 or found[at : at + H] != later:
        raise UserError(
            f"{source}: series {series!r} needs a row at each of its next {H} "
            f"steps, {later[0]} to {later[-1]}, with {', '.join(names)}"
        )
    return np.stack([future.known[c][s][at : at + H] for c in names], 1)


def test_panel(run_dir: str | Path, test: str | Path, history: str | Path | None = None) -> dict:
    """The M4 scores of a global run's forecasts after ``history`` (by default the table it
    trained on) against the long table ``test`` (each series' next horizon): sMAPE, MASE
    and OWA against Naive2 (seasonality: the run's ``season``, else 1), and the ρ-risk of
    each quantile; written to RUN/test_results.json."""
    cfg = runs.read_config(run_dir, ForecastConfig)  # forecast_panel loads the model
    names = tuple(cfg.known_list())
    past = read_panel(history or cfg.csv, known=names)
    truth = read_panel(test, known=names)
    found = forecast_panel(run_dir, past, truth.ids, truth)
    H = cfg.horizon
    short = [i for i, v in zip(truth.ids, truth.values) if len(v) < H]
    if short:
        raise UserError(
            f"{test}: series {', '.join(short[:3])} have fewer than horizon = {H} rows to score"
        )
    check_steps(test, truth, found["steps"], H)
    truths = {i: v[:H] for i, v in zip(truth.ids, truth.values)}
    histories = {i: past.values[past.index(i)] for i in truth.ids}
    season = max(cfg.layout.season, 1)
    result = {
        "model": cfg.model.name,
        "series": len(truths),
        "horizon": H,
        "season": season,
        **m4.score({i: found["forecast"][i][:, 0] for i in truths}, truths, histories, season),
    }
    result["rho_risk"] = {
        f"{level:g}": m4.rho_risk(
            [found["forecast"][i][:, 1 + k] for i in truths], list(truths.values()), level
        )
        for k, level in enumerate(found["quantiles"])
    }
    runs.write_json(run_dir, runs.TEST_RESULTS, result)
    return result

"""Many series, one model: the reader of a long table (``layout=long``; see
:mod:`transduce.data.panel`) into the windows every run trains on, and what a table of
series needs beyond them: the steps after each series' end, and the M4 scores of a test
table.

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

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

from transduce import runs
from transduce.data.calendar import infer_frequency, next_dates
from transduce.data.panel import Panel, read_panel, step_texts
from transduce.data.windows import CALENDAR_FEATURES, Scaler, Windows, calendar_features
from transduce.errors import UserError
from transduce.evaluation import m4
from transduce.tasks.forecasting.config import ForecastConfig
from transduce.tasks.forecasting.data import ForecastData
from transduce.tasks.forecasting.evaluation import Ahead, forecast_ends
from transduce.tasks.forecasting.rundir import check_finite, load_model


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


def next_steps(steps: list, dated: bool, horizon: int) -> list:
    """The ``horizon`` steps after a series' last: by its calendar for dates (month ends
    stay month ends), by its even spacing for integer steps (read_panel checked both)."""
    if dated:
        if len(steps) < 2:
            raise UserError("a dated series of one row has no spacing to forecast by")
        return next_dates(steps, horizon, infer_frequency(steps))
    gap = steps[-1] - steps[-2] if len(steps) > 1 else 1
    return [steps[-1] + gap * (k + 1) for k in range(horizon)]


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


def read_long(cfg: ForecastConfig) -> ForecastData:
    """The long table ``cfg.csv`` as a run's data: every window of every series (left-padded
    ones included), each series' last ``horizon`` steps held out to validate (after
    ``holdout`` steps left out at its end), the windows scaled one by one (``scaling``),
    the covariates z-scored over every row."""
    names = tuple(cfg.input_list()) + tuple(cfg.known_list())
    panel = held_out(read_panel(cfg.csv, known=names), cfg.layout.holdout)
    L, H = cfg.input_length, cfg.horizon
    short = [i for i, v in zip(panel.ids, panel.values) if len(v) < H + 2]
    if short:
        raise UserError(
            f"{cfg.csv}: series {', '.join(short[:3])} hold fewer than "
            f"horizon + 2 = {H + 2} steps{_after_holdout(cfg)}; a global run validates on "
            "each series' last horizon"
        )
    check_scaling(panel, cfg, cfg.csv)
    starts = training_starts(panel, L, H)
    if not len(starts):
        longest = max(len(v) for v in panel.values)
        raise UserError(
            f"{cfg.csv}: no series is long enough to train on: a training window needs "
            f"2 × horizon + 1 = {2 * H + 1} steps (its own horizon, then the last horizon, "
            f"held out to validate), and the longest series has {longest}"
            f"{_after_holdout(cfg)}; give longer series or a shorter horizon"
        )
    covariates = covariate_scaler(panel, names)
    values, times = series_arrays(panel, cfg, covariates)
    cut = dict(values=values, times=times, input_length=L, horizon=H)
    cut.update(inputs=1 + len(cfg.input_list()), targets=1, scaling=cfg.layout.scaling)
    windows = {
        "train": Windows(**cut, starts=starts),
        "val": Windows(**cut, starts=validation_starts(panel, L, H)),
    }
    return ForecastData(
        panel, panel_scaler(covariates), {}, windows, panel.fingerprint(), 1, ["y", *names]
    )


def panel_scaler(covariates: Scaler | None) -> Scaler:
    """A long table's scaler: the identity for ``y`` (scaled window by window), then the
    covariates' z-scores."""
    mean, std = (covariates.mean, covariates.std) if covariates else ((), ())
    return Scaler(np.array([0.0, *mean]), np.array([1.0, *std]))


def _after_holdout(cfg: ForecastConfig) -> str:
    return f" once holdout={cfg.layout.holdout} are left out" if cfg.layout.holdout else ""


def held_out(panel: Panel, holdout: int) -> Panel:
    """``panel`` without each series' last ``holdout`` steps."""
    return panel.sliced(slice(0, -holdout)) if holdout else panel


def series_arrays(
    panel: Panel, cfg: ForecastConfig, covariates: Scaler | None, rows: list[int] | None = None
):
    """Per series (every one, or those of ``rows``), its (T, 1 + inputs) values (``y``,
    then the past-observed covariates, z-scored) and (T, CALENDAR_FEATURES + known)
    features."""
    inputs, known = cfg.input_list(), cfg.known_list()
    values, times = [], []
    for s in range(len(panel.ids)) if rows is None else rows:
        y = panel.values[s][:, None]
        steps = step_features(panel.steps[s], panel.dated, cfg.layout.season)
        if not (inputs or known):
            values.append(y)
            times.append(steps)
            continue
        raw = np.stack([panel.known[c][s] for c in inputs + known], 1)
        scaled = covariates.transform(raw)
        values.append(np.concatenate([y, scaled[:, : len(inputs)]], 1))
        times.append(np.concatenate([steps, scaled[:, len(inputs) :]], 1))
    return values, times


def covariate_scaler(panel: Panel, names: tuple[str, ...]) -> Scaler | None:
    """The covariates' mean and deviation over every row of ``panel``."""
    if not names:
        return None
    return Scaler.fit(np.stack([np.concatenate(panel.known[c]) for c in names], 1))


def ends_of(run, panel: Panel, rows: list[int], future: Panel | None) -> Ahead:
    """The windows a forecast after the series ``rows`` of ``panel`` reads (each its last
    input steps), the next horizon steps' features, and those steps. ``run``: a loaded
    Forecaster; ``future``: the known covariates' values at those steps, if it reads them."""
    cfg, scaler = run.cfg, run.scaler
    inputs, known = cfg.input_list(), cfg.known_list()
    covariates = Scaler(scaler.mean[1:], scaler.std[1:]) if inputs or known else None
    L, H = cfg.input_length, cfg.horizon
    values, times = series_arrays(panel, cfg, covariates, rows)
    ends = Windows(
        values=values,
        times=times,
        input_length=L,
        horizon=0,
        starts=[(k, len(panel.values[s]) - L) for k, s in enumerate(rows)],
        inputs=1 + len(inputs),
        targets=1,
        scaling=cfg.layout.scaling,
    )
    ahead, steps = [], []
    for s in rows:
        later = next_steps(panel.steps[s], panel.dated, H)
        steps.append(later)
        feats = step_features(later, panel.dated, cfg.layout.season)
        if known:
            given = known_ahead(future, panel.ids[s], later, tuple(known))
            feats = np.concatenate([feats, covariates.tail(len(known)).transform(given)], 1)
        ahead.append(feats)
    first = panel.steps[rows[0]]
    shown = [first[max(0, min(k, len(first) - 1))] for k in range(len(first) - L, len(first))]
    text = step_texts(shown + steps[0])
    return Ahead(
        ends=ends,
        features=np.stack(ahead),
        steps=steps,
        given=text[:L],
        later=text[L:],
        read=np.concatenate([panel.values[s][-L:] for s in rows]),
    )


@torch.no_grad()
def forecast_panel(
    run,
    history: Panel | str | Path,
    ids: list[str] | None = None,
    future: Panel | str | Path | None = None,
) -> dict:
    """Each series' next ``horizon`` steps after its last row in ``history`` (a long table
    or its path; by default every series, else those of ``ids``): ``{"steps": {id: [...]},
    "forecast": {id: (H, 1 + Q) array}, "quantiles": levels}`` in the series' own units.
    A run that reads ``known`` covariates takes their values at those steps from ``future``
    (a long table, ``y`` optional). ``run``: a loaded Forecaster (its run_dir, cfg, model
    and scaler)."""
    cfg = run.cfg
    names = tuple(cfg.input_list() + cfg.known_list())
    panel = history if isinstance(history, Panel) else read_panel(history, known=names)
    chosen = [panel.index(i) for i in ids] if ids else list(range(len(panel.ids)))
    check_scaling(
        panel,
        cfg,
        "the history" if isinstance(history, Panel) else history,
        f"{run.run_dir} was trained with scaling=log: give a history of positive values",
    )
    steps, out = {}, {}
    for part in np.array_split(np.arange(len(chosen)), max(1, math.ceil(len(chosen) / 256))):
        rows = [chosen[int(i)] for i in part]
        ahead = ends_of(run, panel, rows, future_of(run, future))
        found = forecast_ends(run.model, ahead.ends, ahead.features, run.scaler.head(1))
        for s, later, v in zip(rows, ahead.steps, found):  # v (H, 1, 1 + Q)
            series = panel.ids[s]
            steps[series] = later
            out[series] = check_finite(
                v[:, 0], panel.values[s][-cfg.input_length :], f"series {series}"
            )
    return {"steps": steps, "forecast": out, "quantiles": list(cfg.quantiles), "dated": panel.dated}


def future_of(run, future: Panel | str | Path | None) -> Panel | None:
    """The table of the known covariates' next values a run that reads them needs."""
    known = run.cfg.known_list()
    if not known:
        return None
    if future is None:
        raise UserError(
            f"{run.run_dir} reads the known covariates {', '.join(known)}: give their "
            f"values at each series' next {run.cfg.horizon} steps (forecast predict "
            "or serve --known FILE)"
        )
    if isinstance(future, Panel):
        return future
    return read_panel(future, known=tuple(known), target=False)


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


def test_panel(run, test: str | Path | None = None, history: str | Path | None = None) -> dict:
    """The M4 scores of a global run's forecasts after ``history`` (by default the table it
    trained on) against the long table ``test`` (each series' next horizon; by default, for
    a run with ``holdout``, the first horizon of the steps it left out): sMAPE, MASE and OWA
    against Naive2 (seasonality: the run's ``season``, else 1), and the ρ-risk of each
    quantile; written to RUN/test_results.json. ``run``: a loaded Forecaster."""
    cfg, H = run.cfg, run.cfg.horizon
    names = tuple(cfg.input_list() + cfg.known_list())
    if test is None:
        if not cfg.layout.holdout:
            raise UserError(
                "a global run is scored against a long table of each series' next "
                "horizon: give --csv TEST.csv (unique_id, ds, y), or train with holdout=N "
                "to score the steps it leaves out"
            )
        whole = read_panel(history or cfg.csv, known=names)
        past, truth, test = held_out(whole, cfg.layout.holdout), _held(whole, cfg), cfg.csv
    else:
        past = held_out(read_panel(history or cfg.csv, known=names), cfg.layout.holdout)
        truth = read_panel(test, known=names)
    found = forecast_panel(run, past, truth.ids, truth)
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
    runs.write_json(run.run_dir, runs.TEST_RESULTS, result)
    return result


def _held(panel: Panel, cfg: ForecastConfig) -> Panel:
    """The first ``horizon`` of the ``holdout`` steps left out at each series' end."""
    start = -cfg.layout.holdout
    return panel.sliced(slice(start, (start + cfg.horizon) or None))


def test_run(run_dir: str | Path) -> dict:
    """:func:`test_panel` of a run trained with ``holdout`` (a backtest's fold) on the
    steps it left out."""
    cfg, model, scaler, columns = load_model(run_dir)
    loaded = SimpleNamespace(run_dir=Path(run_dir), cfg=cfg, model=model, scaler=scaler)
    return test_panel(loaded)

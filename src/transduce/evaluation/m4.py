"""The M4 competition's scores (Makridakis, Spiliotis & Assimakopoulos 2020), as its own
``Benchmarks and Evaluation.R`` computes them, and the probabilistic ρ-risk of LogSparse
and DeepAR.

- sMAPE = mean over steps of 200·|y − ŷ| / (|y| + |ŷ|), per series, then over series.
- MASE = mean |y − ŷ| over the horizon / mean |y_t − y_{t−m}| over the series' history
  (seasonality m), per series, then over series.
- OWA = ½ · (sMAPE / sMAPE_Naive2 + MASE / MASE_Naive2), of the means over all series.
- Naive2: if the history passes a 90% test of seasonality at lag m (|ACF_m| above
  1.645·√((1 + 2 Σ_{k<m} ACF_k²) / n), with n ≥ 3m), divide it by the seasonal indices of a
  classical multiplicative decomposition, repeat its last value and multiply back; else
  repeat the last value.
- R_ρ = 2 · Σ D_ρ(y, ŷ_ρ) / Σ |y| over every series and step,
  D_ρ = (ρ − 1{y ≤ ŷ_ρ})(y − ŷ_ρ).
"""

from __future__ import annotations

import numpy as np

Z_90 = 1.645  # the test's critical value (90%, one-sided)


def smape_terms(forecast, truth) -> np.ndarray:
    """200·|y − ŷ| / (|y| + |ŷ|) per value (0 where both are 0)."""
    forecast, truth = np.asarray(forecast, np.float64), np.asarray(truth, np.float64)
    denominator = np.abs(truth) + np.abs(forecast)
    return np.where(
        denominator > 0,
        200 * np.abs(truth - forecast) / np.where(denominator > 0, denominator, 1),
        0.0,
    )


def smape(forecast, truth) -> float:
    """sMAPE of one series (%)."""
    return float(smape_terms(forecast, truth).mean())


def mase_scale(history, season: int) -> float:
    """The in-sample mean absolute error of the seasonal naive forecast (lag ``season``;
    lag 1 when the history is not longer than a season); 0 for a history of one value."""
    history = np.asarray(history, np.float64)
    m = season if len(history) > season else 1
    if len(history) <= m:
        return 0.0
    return float(np.abs(history[m:] - history[:-m]).mean())


def mase(forecast, truth, history, season: int) -> float:
    """MASE of one series."""
    error = np.abs(np.asarray(truth, np.float64) - np.asarray(forecast, np.float64)).mean()
    return float(error / mase_scale(history, season))


def acf(series, lags: int) -> np.ndarray:
    """Autocorrelations at lags 1..``lags``, as R's acf: about the mean, over n."""
    x = np.asarray(series, np.float64)
    x = x - x.mean()
    denominator = float((x * x).sum())
    return np.array([float((x[:-k] * x[k:]).sum()) / denominator for k in range(1, lags + 1)])


def is_seasonal(history, season: int) -> bool:
    """The M4 benchmarks' 90% test of seasonality at lag ``season``."""
    n = len(history)
    if season <= 1 or n < 3 * season or np.ptp(np.asarray(history, np.float64)) == 0:
        return False  # too short to test, or constant: no autocorrelation to test
    r = acf(history, season)
    limit = Z_90 * np.sqrt((1 + 2 * float((r[: season - 1] ** 2).sum())) / n)
    return bool(abs(r[season - 1]) > limit)


def seasonal_indices(history, season: int) -> np.ndarray:
    """The multiplicative seasonal component of R's ``decompose(type="multiplicative")``,
    one value per step of ``history``."""
    x = np.asarray(history, np.float64)
    n, f = len(x), season
    if f % 2 == 0:
        weights = np.r_[0.5, np.ones(f - 1), 0.5] / f
    else:
        weights = np.ones(f) / f
    half = len(weights) // 2
    trend = np.full(n, np.nan)
    for t in range(half, n - half):
        trend[t] = float((x[t - half : t + half + 1] * weights).sum())
    ratio = x / trend
    figure = np.array([np.nanmean(ratio[i::f]) for i in range(f)])
    figure = figure / figure.mean()
    return figure[np.arange(n) % f]


def naive2(history, horizon: int, season: int) -> np.ndarray:
    """The M4 benchmark Naive2 forecast of ``horizon`` steps."""
    x = np.asarray(history, np.float64)
    if is_seasonal(x, season):
        indices = seasonal_indices(x, season)
        last = indices[-season:]
        ahead = np.resize(last, horizon)
        return (x[-1] / indices[-1]) * ahead
    return np.full(horizon, x[-1])


def seasonal_naive(history, horizon: int, season: int) -> np.ndarray:
    """The last season repeated."""
    x = np.asarray(history, np.float64)
    return np.resize(x[-season:], horizon)


def rho_risk(forecasts, truths, rho: float) -> float | None:
    """R_ρ over all series: 2·Σ D_ρ / Σ|y| (lists of equal-length arrays, or arrays); None
    where every true value is 0 and the ratio has no scale."""
    f = np.concatenate([np.ravel(a) for a in forecasts]).astype(np.float64)
    y = np.concatenate([np.ravel(a) for a in truths]).astype(np.float64)
    loss = ((rho - (y <= f)) * (y - f)).sum()
    scale = np.abs(y).sum()
    return float(2 * loss / scale) if scale > 0 else None


def score(
    forecasts: dict,
    truths: dict,
    histories: dict,
    season: int,
    naive2_scores: tuple[float, float] | None = None,
) -> dict:
    """sMAPE, MASE and (against Naive2, computed here unless given as (sMAPE, MASE)) OWA of
    point forecasts over every series: ``forecasts``, ``truths``, ``histories``: id →
    values (the ids of ``truths``).

    A series whose history the seasonal naive forecast fits exactly (a constant one, say)
    has no MASE: its in-sample error, MASE's denominator, is 0, and any error over it is
    undefined. M4 holds no such series and its R code would divide by zero. Here they are
    left out of MASE, and of Naive2's MASE so that OWA compares like with like, and
    ``mase_series`` counts the series MASE is the mean of. Imputing a scale instead would
    make a number no published MASE can be compared with. Where no series has a MASE, MASE
    and OWA are None, as OWA is where Naive2 scores 0 (it forecast every series exactly):
    JSON null, never NaN or infinity.
    """
    ids = list(truths)
    scaled = [i for i in ids if mase_scale(histories[i], season) > 0]

    def mean_mase(found: dict) -> float | None:
        if not scaled:
            return None
        return float(np.mean([mase(found[i], truths[i], histories[i], season) for i in scaled]))

    s = float(np.mean([smape(forecasts[i], truths[i]) for i in ids]))
    m = mean_mase(forecasts)
    if naive2_scores is None:
        base = {i: naive2(histories[i], len(truths[i]), season) for i in ids}
        naive2_scores = (float(np.mean([smape(base[i], truths[i]) for i in ids])), mean_mase(base))
    n2_smape, n2_mase = naive2_scores
    owa = 0.5 * (s / n2_smape + m / n2_mase) if m is not None and n2_smape and n2_mase else None
    return {
        "smape": s,
        "mase": m,
        "owa": owa,
        "naive2_smape": n2_smape,
        "naive2_mase": n2_mase,
        "mase_series": len(scaled),
    }

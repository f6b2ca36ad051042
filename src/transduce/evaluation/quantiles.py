"""How quantile forecasts are scored: ρ-risks, the coverage of central bands, and the names
of their levels.

The ρ-risk is LogSparse's (Li et al. 2019, after Salinas et al.'s DeepAR):
R_ρ = 2 · Σ D_ρ(x, x̂) / Σ |x|, with D_ρ(x, x̂) = (ρ − 1{x ≤ x̂}) · (x − x̂), summed over
every value of every window, on the original scale.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def rho_loss(forecast: np.ndarray, truth: np.ndarray, rho: float) -> float:
    """Σ D_ρ(x, x̂) = Σ (ρ − 1{x ≤ x̂}) · (x − x̂) over all values (same shapes)."""
    forecast, truth = np.asarray(forecast, np.float64), np.asarray(truth, np.float64)
    return float(((rho - (truth <= forecast)) * (truth - forecast)).sum())


def rho_risk(forecast: np.ndarray, truth: np.ndarray, rho: float) -> float:
    """R_ρ = 2 · Σ D_ρ / Σ |x| of quantile-ρ forecasts against the truth (original units)."""
    return 2 * rho_loss(forecast, truth, rho) / float(np.abs(np.asarray(truth)).sum())


def coverage(lower: np.ndarray, upper: np.ndarray, truth: np.ndarray) -> float:
    """The share of true values inside [lower, upper]."""
    return float(np.mean((truth >= lower) & (truth <= upper)))


def band_coverage(q, y, levels: Sequence[float]) -> dict[str, float]:
    """The share of true values y (..., H, C) inside each central band (e.g. "0.1-0.9") of
    the quantiles q (..., H, C, Q) at ``levels``; tensors or arrays."""
    q, y = np.asarray(q), np.asarray(y)
    return {
        f"{levels[lo]:g}-{levels[hi]:g}": coverage(q[..., lo], q[..., hi], y)
        for lo, hi in intervals(list(levels))
    }


def intervals(levels: Sequence[float]) -> list[tuple[int, int]]:
    """Index pairs (low, high) of levels that bound a central interval (0.1 with 0.9)."""
    pairs = []
    for i, low in enumerate(levels):
        high = [j for j, level in enumerate(levels) if abs(level - (1 - low)) < 1e-9]
        if low < 0.5 and high:
            pairs.append((i, high[0]))
    return pairs


def column_name(column: str, level: float) -> str:
    """The CSV column of a quantile, e.g. ``OT_q0.1``."""
    return f"{column}_q{level:g}"

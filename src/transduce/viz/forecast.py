"""Forecast plots: history, forecast and truth per channel; cross-attention over the input."""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from transduce.viz.heatmaps import _save  # noqa: E402


def plot_forecast(history: np.ndarray, truth: np.ndarray, forecast: np.ndarray,
                  columns: list[str], path: str | os.PathLike, title: str = "") -> None:
    """One panel per channel: the L input steps, then the H true and forecast steps.

    Args: history (L, C), truth (H, C), forecast (H, C), in the same units.
    """
    L, C = history.shape
    future = np.arange(L, L + truth.shape[0])
    fig, axes = plt.subplots(C, 1, figsize=(10, 1.8 * C + 0.6), sharex=True, squeeze=False)
    for c, axis in enumerate(axes[:, 0]):
        axis.plot(np.arange(L), history[:, c], color="0.35", lw=1, label="input")
        axis.plot(future, truth[:, c], color="tab:green", lw=1, label="truth")
        axis.plot(future, forecast[:, c], color="tab:red", lw=1.2, label="forecast")
        axis.axvline(L - 0.5, color="0.6", ls=":", lw=1)
        axis.set_ylabel(columns[c], rotation=0, ha="right", fontsize=8)
    axes[0, 0].legend(loc="upper left", fontsize=8, ncol=3)
    axes[-1, 0].set_xlabel("step in window")
    if title:
        fig.suptitle(title, fontsize=10)
    _save(fig, path)


def plot_cross_attention(weights: np.ndarray, label_length: int, path: str | os.PathLike,
                         title: str = "") -> None:
    """Heatmap of decoder cross-attention, averaged over heads.

    Args: weights (K + H, L): rows are decoder positions (K known, then H forecast steps),
        columns the input steps.
    """
    fig, axis = plt.subplots(figsize=(10, 4))
    image = axis.imshow(weights, aspect="auto", cmap="viridis", interpolation="nearest")
    axis.axhline(label_length - 0.5, color="white", lw=0.8, ls="--")
    axis.set_xlabel("input step (encoder)")
    axis.set_ylabel("decoder position (known, then forecast)")
    fig.colorbar(image, ax=axis, label="attention weight")
    if title:
        axis.set_title(title, fontsize=10)
    _save(fig, path)

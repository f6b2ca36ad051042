"""Forecast plots: history, forecast and truth per channel; cross-attention over the input;
attention between channels."""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from transduce.evaluation.quantiles import intervals  # noqa: E402
from transduce.viz.heatmaps import _save  # noqa: E402


def plot_forecast(
    history: np.ndarray,
    truth: np.ndarray | None,
    forecast: np.ndarray,
    columns: list[str],
    path: str | os.PathLike,
    title: str = "",
    quantiles: np.ndarray | None = None,
    levels: tuple[float, ...] = (),
    dates: list | None = None,
) -> None:
    """One panel per channel: the L input steps, then the H true (if known) and forecast
    steps, and a band for each central interval of the quantiles (e.g. 0.1–0.9).

    Args: history (L, C), truth (H, C) or None (the real future), forecast (H, C),
        quantiles (H, C, Q) at ``levels``, all in the same units; dates: the L + H
        timestamps for a date axis (default: the step in the window).
    """
    L, C = history.shape
    H = forecast.shape[0]
    steps = np.asarray(dates, dtype=object) if dates is not None else np.arange(L + H)
    past, future = steps[:L], steps[L:]
    pairs = intervals(list(levels)) if quantiles is not None else []
    fig, axes = plt.subplots(C, 1, figsize=(10, 1.8 * C + 0.9), sharex=True, squeeze=False)
    for c, axis in enumerate(axes[:, 0]):
        for k, (low, high) in enumerate(pairs):  # outermost first, lightest
            axis.fill_between(
                future,
                quantiles[:, c, low],
                quantiles[:, c, high],
                color="tab:red",
                alpha=0.15 + 0.1 * k,
                lw=0,
                label=f"{levels[low]:g}–{levels[high]:g} quantiles",
            )
        axis.plot(past, history[:, c], color="0.35", lw=1, label="history")
        if truth is not None:
            axis.plot(future, truth[:, c], color="tab:green", lw=1, label="truth")
        axis.plot(future, forecast[:, c], color="tab:red", lw=1.2, label="forecast")
        axis.axvline(past[-1], color="0.6", ls=":", lw=1)
        axis.set_ylabel(columns[c], rotation=0, ha="right", fontsize=8)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="upper center",
        bbox_to_anchor=(0.5, 1.0),
        fontsize=8,
        ncol=len(labels),
        frameon=False,
    )  # above the panels, off the data
    # the panels start just under the legend: matplotlib's default top margin (12% of the
    # height) left an empty band of 1.6 inches above seven panels
    fig.subplots_adjust(top=1 - 0.4 / fig.get_figheight())
    if dates is None:
        axes[-1, 0].set_xlabel("step in window")
    else:
        fig.autofmt_xdate()
    if title:
        fig.suptitle(title, fontsize=10, y=1 + 0.25 / fig.get_figheight())  # over the legend
    _save(fig, path)


def plot_cross_attention(
    weights: np.ndarray,
    label_length: int,
    path: str | os.PathLike,
    title: str = "",
    heads: int = 1,
    dates: list | None = None,
) -> None:
    """Heatmap of decoder cross-attention, the mean of ``heads`` heads.

    Args: weights (K + H, L): rows are decoder positions (K known, then H forecast steps),
        columns the input steps. dates: the L + H dates of the window; with them both axes
        are dates, so the map lines up with the forecast plot's time axis.

    The colour scale starts at 0 and reaches at least 5 × the uniform weight 1/L, so a map
    that spreads attention almost evenly looks pale instead of showing its noise as contrast.
    """
    rows, L = weights.shape
    top = max(float(weights.max()), 5.0 / L)
    fig, axis = plt.subplots(figsize=(10, 4.5))
    extent = None
    if dates is not None:
        import matplotlib.dates as mdates

        numbers = mdates.date2num(list(dates))
        step = numbers[1] - numbers[0]
        inputs, decoder = numbers[:L], numbers[L - label_length : L + rows - label_length]
        extent = (
            inputs[0] - step / 2,
            inputs[-1] + step / 2,
            decoder[-1] + step / 2,
            decoder[0] - step / 2,
        )
        axis.xaxis_date()
        axis.yaxis_date()
    image = axis.imshow(
        weights,
        aspect="auto",
        cmap="Blues",
        vmin=0.0,
        vmax=top,
        interpolation="nearest",
        extent=extent,
    )
    if dates is not None:
        axis.axhline(decoder[label_length] - step / 2, color="tab:red", lw=0.8, ls="--")
        axis.set_xlabel("input step (encoder), by date")
        axis.set_ylabel("decoder step, by date\n(known, then forecast)")
        fig.autofmt_xdate()
    else:
        axis.axhline(label_length - 0.5, color="tab:red", lw=0.8, ls="--")
        axis.set_xlabel("input step (encoder)")
        axis.set_ylabel("decoder position (known, then forecast)")
    fig.colorbar(image, ax=axis, label=f"attention weight (uniform: 1/{L} = {1 / L:.3f})")
    what = f"cross-attention, mean of {heads} heads" if heads > 1 else "cross-attention"
    axis.set_title(f"{title} · {what}" if title else what, fontsize=10)
    _save(fig, path)


def plot_channel_attention(
    weights: np.ndarray,
    names: list[str],
    path: str | os.PathLike,
    title: str = "",
    heads: int = 1,
    targets: int | None = None,
) -> None:
    """Heatmap of the attention between channel tokens (the ``channel`` model's), the mean
    of ``heads`` heads: row i is how much channel i's token read each channel's.

    Args: weights (C, C); names: the C column names, forecast columns first, then the
        past-observed inputs (``targets`` of them are forecast; a line separates the rest).

    As for cross-attention, the colour scale starts at 0 and reaches at least 5 × the
    uniform weight 1/C (at most 1), so near-uniform attention looks pale.
    """
    C = len(names)
    top = max(float(weights.max()), min(1.0, 5.0 / C))
    size = 2.5 + 0.45 * C
    fig, axis = plt.subplots(figsize=(size + 1.5, size))
    image = axis.imshow(weights, cmap="Blues", vmin=0.0, vmax=top, interpolation="nearest")
    axis.set_xticks(range(C), names, rotation=45, ha="right")
    axis.set_yticks(range(C), names)
    if targets and targets < C:
        axis.axhline(targets - 0.5, color="tab:red", lw=0.8, ls="--")
        axis.axvline(targets - 0.5, color="tab:red", lw=0.8, ls="--")
    axis.set_xlabel("channel read (key)")
    axis.set_ylabel("channel reading (query)")
    fig.colorbar(image, ax=axis, label=f"attention weight (uniform: 1/{C} = {1 / C:.3f})")
    what = (
        f"attention between channels, mean of {heads} heads"
        if heads > 1
        else "attention between channels"
    )
    axis.set_title(f"{title}\n{what}" if title else what, fontsize=10)
    _save(fig, path)


SPLIT_COLOURS = {"train": "0.75", "validation": "tab:blue", "test": "tab:orange"}


def plot_backtest(
    dates: list,
    values: np.ndarray,
    column: str,
    folds: list[tuple[int, int, int, float]],
    protocol: tuple[int, int, int] | None,
    path: str | os.PathLike,
    title: str = "",
    columns: int = 1,
    measure: str = "mse",
) -> None:
    """Where a backtest's folds lie: the series over the whole file, and under it one bar
    per split layout (the protocol's, then each fold's): train, validation and test rows
    on the same date axis, each fold labelled with its test MSE.

    Args: dates (N,) and values (N,) of the series (one column, original units; integer
        steps where it has no dates); folds: (A, B, C, test ``measure``) per fold, train
        [0, A), validation [A, B), test [B, C); protocol: the protocol's (A, B, C), whose
        test split no fold reads (none for a long table); columns: how many columns the
        folds forecast (scored over all of them, ``values`` the first)."""
    from matplotlib.dates import date2num
    from matplotlib.patches import Patch

    dated = len(dates) and not isinstance(dates[0], (int, np.integer))
    x = date2num(dates) if dated else np.asarray(dates, np.float64)
    step = x[1] - x[0] if len(x) > 1 else 1.0
    rows = [("protocol", *protocol, None)] if protocol else []
    rows += [(f"fold {k}", a, b, c, score) for k, (a, b, c, score) in enumerate(folds, 1)]
    fig, (top, bars) = plt.subplots(
        2,
        1,
        sharex=True,
        figsize=(10, 2.4 + 0.3 * len(rows)),
        gridspec_kw={"height_ratios": [2.0, 0.3 * len(rows)]},
    )
    top.plot(dates, values, color="0.35", lw=0.7)
    top.set_ylabel(column, rotation=0, ha="right", fontsize=8)
    if columns > 1:
        top.set_title(
            f"column {column}, the first of the {columns} forecast", fontsize=8, loc="left"
        )
    for i, (name, a, b, c, mse) in enumerate(rows):
        y = len(rows) - 1 - i  # the protocol on top
        unread = name == "protocol"
        spans = [(0, a, "train"), (a, b, "validation"), (b, c, "test")]
        for start, end, split in spans:
            bars.broken_barh(
                [(x[start], x[end - 1] - x[start] + step)],
                (y - 0.35, 0.7),
                color=SPLIT_COLOURS[split],
                hatch="//" if unread and split == "test" else None,
                alpha=0.45 if unread and split == "test" else 1.0,
            )
        label = f"test {measure} " + ("n/a" if mse is None else f"{mse:.3f}")
        label = "test split: not read" if unread else label
        bars.text(x[c - 1] + step, y, f" {label}", va="center", fontsize=7)
    bars.set_yticks(range(len(rows)), [r[0] for r in reversed(rows)], fontsize=8)
    bars.set_ylim(-0.6, len(rows) - 0.4)
    bars.set_xlim(x[0], x[-1] + step)
    fig.legend(
        [Patch(color=c) for c in SPLIT_COLOURS.values()],
        list(SPLIT_COLOURS),
        loc="upper center",
        bbox_to_anchor=(0.5, 1.0),
        ncol=3,
        fontsize=8,
        frameon=False,
    )
    fig.subplots_adjust(top=1 - 0.4 / fig.get_figheight())
    if dated:
        fig.autofmt_xdate()
    if title:
        fig.suptitle(title, fontsize=10, y=1 + 0.25 / fig.get_figheight())
    _save(fig, path)

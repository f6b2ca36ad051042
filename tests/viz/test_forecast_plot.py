"""The forecast plot's layout: the legend sits above the panels, off the data, and close."""

import numpy as np
import pytest

from transduce.viz import forecast


@pytest.mark.parametrize("channels", [1, 7])
def test_the_legend_sits_just_above_the_top_panel(monkeypatch, tmp_path, channels):
    saved = []
    monkeypatch.setattr(forecast, "_save", lambda fig, path: saved.append(fig))
    rng = np.random.default_rng(0)
    forecast.plot_forecast(
        rng.normal(size=(48, channels)),
        rng.normal(size=(12, channels)),
        rng.normal(size=(12, channels)),
        [f"c{i}" for i in range(channels)],
        tmp_path / "f.png",
        title="a title",
    )
    fig = saved[0]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legend = fig.legends[0].get_window_extent(renderer)
    top_panel = fig.axes[0].get_window_extent(renderer)
    gap_inches = (legend.y0 - top_panel.y1) / fig.dpi
    assert 0 <= gap_inches < 0.3  # above the data, with no empty band between
    title = fig._suptitle.get_window_extent(renderer)
    assert title.y0 >= legend.y1 - 1  # the title does not cover the legend


def test_the_backtest_figure_draws_each_fold_where_its_rows_are(monkeypatch, tmp_path):
    from datetime import datetime, timedelta

    from matplotlib.dates import date2num

    saved = []
    monkeypatch.setattr(forecast, "_save", lambda fig, path: saved.append(fig))
    dates = [datetime(2020, 1, 1) + timedelta(days=i) for i in range(100)]
    forecast.plot_backtest(
        dates,
        np.arange(100.0),
        "OT",
        [(40, 50, 70, 0.25), (30, 40, 60, 0.5)],
        (70, 80, 100),
        tmp_path / "b.png",
        columns=3,
    )
    top, bars = saved[0].axes
    assert [t.get_text() for t in bars.get_yticklabels()] == ["fold 2", "fold 1", "protocol"]
    spans = [c.get_paths()[0].get_extents() for c in bars.collections]  # train, val, test per row
    assert len(spans) == 9
    ticks = {t.get_text(): t.get_position()[1] for t in bars.get_yticklabels()}
    for row, name in enumerate(["protocol", "fold 1", "fold 2"]):  # each bar on its label
        assert (spans[3 * row].y0 + spans[3 * row].y1) / 2 == pytest.approx(ticks[name])
    day = date2num(dates[1]) - date2num(dates[0])
    fold_1_test = spans[5]  # the protocol's three bars, then fold 1's
    assert fold_1_test.x0 == pytest.approx(date2num(dates[50]))
    assert fold_1_test.x1 == pytest.approx(date2num(dates[69]) + day)  # its last row, 69
    labels = [t.get_text().strip() for t in bars.texts]
    assert labels == ["test split: not read", "test mse 0.250", "test mse 0.500"]
    assert "the first of the 3 forecast" in top.get_title(loc="left")

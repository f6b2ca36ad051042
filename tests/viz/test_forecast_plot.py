"""The forecast plot's layout: the legend sits above the panels, off the data, and close."""

import numpy as np
import pytest

from transduce.viz import forecast


@pytest.mark.parametrize("channels", [1, 7])
def test_the_legend_sits_just_above_the_top_panel(monkeypatch, tmp_path, channels):
    saved = []
    monkeypatch.setattr(forecast, "_save", lambda fig, path: saved.append(fig))
    rng = np.random.default_rng(0)
    forecast.plot_forecast(rng.normal(size=(48, channels)), rng.normal(size=(12, channels)),
                           rng.normal(size=(12, channels)),
                           [f"c{i}" for i in range(channels)], tmp_path / "f.png",
                           title="a title")
    fig = saved[0]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legend = fig.legends[0].get_window_extent(renderer)
    top_panel = fig.axes[0].get_window_extent(renderer)
    gap_inches = (legend.y0 - top_panel.y1) / fig.dpi
    assert 0 <= gap_inches < 0.3  # above the data, with no empty band between
    title = fig._suptitle.get_window_extent(renderer)
    assert title.y0 >= legend.y1 - 1  # the title does not cover the legend

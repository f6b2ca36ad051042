"""The Python entry points: :func:`load` gives a model ready to use (a translator or a
forecaster); :class:`Forecaster` fits a forecasting run from a CSV and forecasts with it.

Each name is imported on first use, so that translating never pays for forecasting's
imports (pandas, matplotlib).
"""

import importlib

__all__ = ["Forecaster", "GlobalForecaster", "backtest", "load"]
_HOMES = {
    "Forecaster": "forecaster",
    "GlobalForecaster": "panel",
    "backtest": "forecast_frames",
    "load": "loading",
}


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'transduce.api' has no attribute {name!r}")
    return getattr(importlib.import_module(f"transduce.api.{_HOMES[name]}"), name)

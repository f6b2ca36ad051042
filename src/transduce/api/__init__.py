"""The Python entry points: :func:`load` gives a model ready to use (a translator or a
forecaster); :class:`Forecaster` fits a forecasting run from a CSV and forecasts with it."""

from transduce.api.forecast_frames import backtest
from transduce.api.forecaster import Forecaster
from transduce.api.loading import load
from transduce.api.panel import GlobalForecaster  # registers the class of global runs

__all__ = ["Forecaster", "GlobalForecaster", "backtest", "load"]

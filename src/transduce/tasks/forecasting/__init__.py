"""Forecasting time series with the translation encoder/decoder (shared by import): the
settings (``config``), the series and their windows (``data``), the task the engine trains
(``task``), and the workflows over runs (``evaluation``, ``calibration``, ``blend``,
``backtesting``). The models are in :mod:`transduce.nn.forecasting`; fitting and
forecasting from Python is :class:`transduce.Forecaster`."""

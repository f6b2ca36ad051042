"""Forecasting time series with the translation encoder/decoder (shared by import).

``Forecaster.fit(csv, run_dir, config, **settings)`` trains a run and loads it;
``.predict(csv)`` and ``.plot(csv, png)`` forecast after a file's last row;
``backtest(csv, run_dir, config, folds=3, **settings)`` scores a config on stretches of the
series before its test split."""


def __getattr__(name: str):  # `from transduce.forecasting import Forecaster`, loaded lazily
    if name in ("Forecaster", "backtest"):
        from transduce.forecasting import predict

        return getattr(predict, name)
    raise AttributeError(name)

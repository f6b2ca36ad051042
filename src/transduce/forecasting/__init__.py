"""Forecasting time series with the translation encoder/decoder (shared by import).

``Forecaster.fit(csv, run_dir, config, **settings)`` trains a run and loads it;
``.predict(csv)`` and ``.plot(csv, png)`` forecast after a file's last row."""


def __getattr__(name: str):  # `from transduce.forecasting import Forecaster`, loaded lazily
    if name == "Forecaster":
        from transduce.forecasting.predict import Forecaster

        return Forecaster
    raise AttributeError(name)

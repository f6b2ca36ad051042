"""`transduce forecast predict`: forecast the rows after a CSV's last one, in its units."""

from __future__ import annotations

import csv
import io
from datetime import datetime
from pathlib import Path

import numpy as np
import torch

from transduce.data.timeseries import calendar_features, read_series
from transduce.errors import UserError
from transduce.forecasting.evaluation import load_model


def future_dates(dates: list[datetime], count: int) -> list[datetime]:
    """``count`` timestamps after the last, at the series' last step."""
    if len(dates) < 2:
        raise UserError("need at least two dates to know the series' time step")
    step = dates[-1] - dates[-2]
    try:
        return [dates[-1] + step * (i + 1) for i in range(count)]
    except OverflowError:
        raise UserError(f"the {count} dates after {dates[-1]} go past the year 9999, the "
                        "last date Python can hold; check the file's dates") from None


@torch.no_grad()
def predict_csv(run_dir: str | Path, csv_path: str | Path) -> str:
    """The forecast of the ``horizon`` rows after the file's last row, as CSV text with the
    file's date column and the run's columns, in the original units."""
    cfg, model, scaler, columns = load_model(run_dir)
    series = read_series(csv_path, cfg.date_column, columns)
    if len(series.dates) < cfg.input_length:
        raise UserError(f"{csv_path}: {len(series.dates)} rows; the model reads the last "
                        f"{cfg.input_length}, so the file needs at least that many")
    last = series.values[-cfg.input_length:]
    x = torch.from_numpy(scaler.transform(last)).unsqueeze(0)  # (1, L, C)
    dates = future_dates(series.dates, cfg.horizon)
    x_time = torch.from_numpy(calendar_features(series.dates[-cfg.input_length:])).unsqueeze(0)
    y_time = torch.from_numpy(calendar_features(dates)).unsqueeze(0)
    forecast, _ = model(x, x_time, y_time)  # (1, H, C)
    values = scaler.inverse(forecast[0].double().numpy())
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([cfg.date_column, *columns])
    for date, row in zip(dates, values):
        writer.writerow([date.isoformat(sep=" "), *(f"{v:.6g}" for v in np.asarray(row))])
    return out.getvalue()

from datetime import datetime, timedelta

import numpy as np
import pytest

from transduce.data.timeseries import read_series
from transduce.data.windows import Scaler, Windows, calendar_features, split_borders, window_count
from transduce.errors import UserError


def write_csv(path, rows, header="date,a,b"):
    path.write_text(header + "\n" + "".join(r + "\n" for r in rows), encoding="utf-8")
    return path


def hourly(n, start=datetime(2020, 1, 1)):
    return [start + timedelta(hours=i) for i in range(n)]


def test_ratio_borders_and_window_counts():
    borders = split_borders(100, input_length=10, scheme="ratio")
    assert borders == {"train": (0, 70), "val": (60, 80), "test": (70, 100)}
    counts = {s: window_count(*b, 10, 5) for s, b in borders.items()}
    assert counts == {"train": 56, "val": 6, "test": 16}


def test_ett_borders_are_twelve_four_four_months():
    borders = split_borders(17420, input_length=336, scheme="ett_hour")
    assert borders == {"train": (0, 8640), "val": (8640 - 336, 11520), "test": (11520 - 336, 14400)}
    assert window_count(*borders["test"], 336, 96) == 2785  # the protocol's ETTh1-96 count
    with pytest.raises(UserError, match="need 14400 rows"):
        split_borders(1000, 336, "ett_hour")


def test_row_borders_move_the_protocol_to_any_stretch_of_the_file():
    borders = split_borders(100, input_length=10, scheme="rows:40,55,75")
    assert borders == {"train": (0, 40), "val": (30, 55), "test": (45, 75)}
    assert {s: window_count(*b, 10, 5) for s, b in borders.items()} == {
        "train": 26,
        "val": 11,
        "test": 16,
    }
    with pytest.raises(UserError, match="the file has 100 rows; lower C to at most 100"):
        split_borders(100, 10, "rows:40,55,101")
    for bad in ("rows:55,40,75", "rows:40,55", "rows:0,55,75", "rows:a,55,75"):
        with pytest.raises(UserError, match="three increasing row numbers"):
            split_borders(100, 10, bad)


def test_no_test_window_sees_a_value_after_its_forecast_start():
    n, L, H = 100, 10, 5
    values = np.arange(n, dtype=np.float32)[:, None]  # value = row index
    start, end = split_borders(n, L, "ratio")["test"]
    windows = Windows(
        values=values,
        times=calendar_features(hourly(n)),
        start=start,
        end=end,
        input_length=L,
        horizon=H,
    )
    assert windows[0][1][0, 0] == 80  # the first forecast starts on the test border
    for i in range(len(windows)):
        x, y, _, _ = windows[i]
        assert x.max() < y.min() and y[0, 0] == x[-1, 0] + 1
    assert windows[len(windows) - 1][1][-1, 0] == n - 1
    with pytest.raises(IndexError):
        windows[len(windows)]


def test_scaler_uses_the_given_rows_only():
    rng = np.random.default_rng(0)
    train = rng.normal(5, 2, size=(70, 2))
    test = rng.normal(500, 90, size=(30, 2))
    scaler = Scaler.fit(train)
    np.testing.assert_allclose(scaler.mean, train.mean(0))
    np.testing.assert_allclose(scaler.std, train.std(0))
    np.testing.assert_allclose(scaler.inverse(scaler.transform(test)), test, rtol=1e-5)


def test_read_series_parses_dates_and_values(tmp_path):
    path = write_csv(tmp_path / "s.csv", ["1990/1/1 0:00,1,2", "1990/1/2 0:00,3.5,-4"])
    series = read_series(path)
    assert series.columns == ["a", "b"] and series.dates[1] == datetime(1990, 1, 2)
    np.testing.assert_array_equal(series.values, [[1, 2], [3.5, -4]])
    assert series.select(["b"]).values[:, 0].tolist() == [2, -4]


@pytest.mark.parametrize(
    "rows, message",
    [
        (["2020-01-01,1,2", "2020-01-02,,3"], "s.csv:3: column 'a' holds ''"),
        (["2020-01-01,1,2", "2020-01-02,x,3"], "s.csv:3: column 'a' holds 'x'"),
        (["2020-01-01,1,2", "2020-01-02,1,nan"], "s.csv:3: column 'b' holds 'nan'"),
        (["2020-01-02,1,2", "2020-01-01,1,3"], "s.csv:3: date 2020-01-01 does not come after"),
        (["2020-01-01,1,2", "2020-01-01,1,3"], "s.csv:3: date 2020-01-01 repeats the previous"),
        (["2020-01-01,1,2", "soon,1,3"], "s.csv:3: cannot read date 'soon'"),
        (["2020-01-01,1,2", "2020-01-02,1"], "s.csv:3: 2 fields, the header has 3"),
    ],
)
def test_bad_rows_are_named(tmp_path, rows, message):
    with pytest.raises(UserError, match=message.replace("(", r"\(")):
        read_series(write_csv(tmp_path / "s.csv", rows))


def test_a_row_repeated_exactly_is_read_once_with_a_note(tmp_path, caplog):
    rows = ["2020-05-12 05:50:00,1,2", "2020-05-12 06:00:00,3,4", "2020-05-12 06:00:00,3,4"]
    series = read_series(write_csv(tmp_path / "s.csv", rows + ["2020-05-12 06:10:00,5,6"]))
    assert len(series.dates) == 3 and series.lines == [2, 3, 5]
    np.testing.assert_array_equal(series.values[:, 0], [1, 3, 5])
    assert "s.csv: line 4 repeats the row before exactly; read once" in caplog.text


MONTH_STARTS = [datetime(2020 + m // 12, m % 12 + 1, 1) for m in range(14)]


@pytest.mark.parametrize(
    "texts, dates",
    [
        # a day above 12: day first
        (["11/01/2020", "12/01/2020", "13/01/2020"], [datetime(2020, 1, d) for d in (11, 12, 13)]),
        # a day above 12 in the second place: month first, as US spreadsheets write it
        (["01/11/2020", "01/12/2020", "01/13/2020"], [datetime(2020, 1, d) for d in (11, 12, 13)]),
        # every date reads both ways: the reading whose steps are even
        ([f"01/{d.month:02}/{d.year}" for d in MONTH_STARTS], MONTH_STARTS),  # day first
        ([f"{d.month}/1/{d.year}" for d in MONTH_STARTS], MONTH_STARTS),  # month first
    ],
)
def test_dates_with_the_year_last_are_read_day_or_month_first(tmp_path, texts, dates):
    path = write_csv(tmp_path / "s.csv", [f"{t},1,2" for t in texts])
    assert read_series(path).dates == dates


def test_dates_that_put_the_day_first_and_the_month_first_are_refused(tmp_path):
    path = write_csv(tmp_path / "s.csv", ["13/01/2020,1,2", "01/14/2020,1,2"])
    with pytest.raises(
        UserError,
        match="s.csv:2: date '13/01/2020' puts the day first, line 3's '01/14/2020' the month",
    ):
        read_series(path)


@pytest.mark.parametrize("mark, name", [(";", "semicolon"), ("\t", "tab")])
def test_a_file_separated_by_other_than_commas_is_named_so(tmp_path, mark, name):
    path = tmp_path / "s.csv"
    path.write_text(f"date{mark}a{mark}b\n2020-01-01{mark}1,5{mark}2\n", encoding="utf-8")
    with pytest.raises(
        UserError,
        match=f"s.csv: the header is one field, .*: the file looks "
        f"{name}-separated; save it comma-separated",
    ):
        read_series(path)


def test_unknown_column_and_missing_date_column(tmp_path):
    path = write_csv(tmp_path / "s.csv", ["2020-01-01,1,2"])
    with pytest.raises(UserError, match="no column 'c'; columns are a, b"):
        read_series(path).select(["c"])
    with pytest.raises(UserError, match="no 'time' column"):
        read_series(path, date_column="time")
    with pytest.raises(UserError, match="'date' is the date column, not a value column"):
        read_series(path, columns=["a", "date"])

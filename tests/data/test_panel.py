"""The long table of many series (``unique_id, ds, y``): its faults named by line, its dates
on the calendar, and M4's wide files converted to it."""

import pytest

from transduce.cli.main import main
from transduce.data.panel import m4_wide, read_panel, write_panel
from transduce.errors import UserError
from transduce.tasks.forecasting.panel import next_steps


@pytest.mark.parametrize(
    "text, message",
    [
        ("id,ds,y\nA,1,2\n", "no column unique_id"),
        ("unique_id,ds,y,price\nA,1,2,3\n", "columns price are not read: name them known=price"),
        ("unique_id,ds,y\nA,1,2\nA,1,3\n", ":3: series 'A' has ds 1 after 1"),
        ("unique_id,ds,y\nA,1,nan\n", ":2: y 'nan' is not a finite number"),
        ("unique_id,ds,y\nA,1,x\n", ":2: y 'x' is not a number"),
        (
            "unique_id,ds,y\nA,2020-01-01,1\nA,3,2\n",
            ":3: ds '3' is a step where earlier rows have dates",
        ),
        ("unique_id,ds,y\n", "no rows under the header"),
        (
            "unique_id,ds,y\nA,2020-01-01,1\nA,2020-01-02,1\nA,2020-01-04,1\n",
            ":4: date 2020-01-04 follows 2020-01-02, but the series is daily; fill the gap",
        ),
        ("unique_id,ds,y\nA,1,1\nA,2,1\nA,4,1\n", ":4: series 'A' steps from 2 to 4, where"),
        (
            "unique_id,ds,y\nA,2020-01-01 00:00,1\nA,2020-01-01 01:00+00:00,1\n",
            ":3: ds '2020-01-01 01:00\\+00:00' has a time zone, line 2's not",
        ),
        ("unique_id,ds,y\nA,soon,1\n", ":2: ds 'soon' is neither an integer step nor a date"),
        ("unique_id,ds,y,\nA,1,2,\n", "the header's field 4 is empty; name that column"),
        ("unique_id,ds,y\nA,1e20,1\n", ":2: ds '1e20' is neither an integer step nor a date"),
    ],
)
def test_bad_long_tables_are_named_by_line(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace("'", "'")):
        read_panel(path)


def test_m4_wide_files_become_long_tables(tmp_path):
    (tmp_path / "Hourly-train.csv").write_text(
        '"V1","V2","V3","V4"\n"H1","1","2",""\n"H2","5","6","7"\n'
    )
    (tmp_path / "Hourly-test.csv").write_text('"V1","V2"\n"H1","3"\n"H2","8"\n')
    assert main(["data", "m4", "--from", str(tmp_path), "--dest", str(tmp_path / "out")]) == 0
    train = read_panel(tmp_path / "out" / "m4_hourly_train.csv")
    test = read_panel(tmp_path / "out" / "m4_hourly_test.csv")
    assert train.ids == ["H1", "H2"] and train.steps == [[1, 2], [1, 2, 3]]
    assert test.steps == [[3], [4]] and [v.tolist() for v in test.values] == [[3], [8]]
    assert m4_wide(tmp_path / "Hourly-test.csv")[0] == ["H1", "H2"]


@pytest.mark.parametrize(
    "written, expected",
    [  # month starts stay month starts, month ends month ends; US-style dates are read
        (["2023-02-01", "2023-03-01", "2023-04-01"], ["2023-05-01", "2023-06-01", "2023-07-01"]),
        (["2023-01-31", "2023-02-28", "2023-03-31"], ["2023-04-30", "2023-05-31", "2023-06-30"]),
        (["01/31/2023", "02/28/2023", "03/31/2023"], ["2023-04-30", "2023-05-31", "2023-06-30"]),
        (  # business days
            ["2023-01-05", "2023-01-06", "2023-01-09", "2023-01-10", "2023-01-11"],
            ["2023-01-12", "2023-01-13", "2023-01-16"],
        ),
    ],
)
def test_long_table_dates_step_by_the_calendar(tmp_path, written, expected):
    path = tmp_path / "t.csv"
    path.write_text("unique_id,ds,y\n" + "".join(f"A,{d},1\n" for d in written))
    panel = read_panel(path)
    after = next_steps(panel.steps[0], panel.dated, 3)
    assert write_panel(None, ["A"], [after], [[0, 0, 0]]).splitlines()[1:] == [
        f"A,{d},0" for d in expected
    ]


def test_a_byte_order_mark_is_read_past_and_the_last_date_python_holds_is_one_line(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_text("\ufeffunique_id,ds,y\nA,9999-12-30,1\nA,9999-12-31,2\n", encoding="utf-8")
    panel = read_panel(path)
    assert panel.ids == ["A"] and panel.dated
    with pytest.raises(UserError, match="go past the year 9999, the last date Python can hold"):
        next_steps(panel.steps[0], panel.dated, 2)


@pytest.mark.parametrize(
    "text, message",
    [
        ('"V1","V2"\n"H1","1"\n"H2","nan"\n', ":3: a value of H2 'nan' is not a finite number"),
        ('"V1","V2"\n"H1","inf"\n', ":2: a value of H1 'inf' is not a finite number"),
        ('"V1","V2"\n"H1","1e39"\n', ":2: a value of H1 '1e39' is not a finite number"),
        ('"V1","V2"\n"H1","1"\n"H2","2\n', ":3: unexpected end of data (a quote left open?)"),
        ('"V1","V2"\n', "a header but no series"),
    ],
)
def test_bad_m4_files_are_named_by_line_and_nothing_is_written(tmp_path, capsys, text, message):
    (tmp_path / "Hourly-train.csv").write_text(text)
    (tmp_path / "Hourly-test.csv").write_text('"V1","V2"\n"H1","3"\n')
    assert main(["data", "m4", "--from", str(tmp_path), "--dest", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "out").exists()


def test_the_m4_frequency_is_one_of_m4s(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit:
        main(["data", "m4", "--from", str(tmp_path), "--frequency", "../m4/Hourly", "--dest", "x"])
    assert exit.value.code == 2
    assert "invalid choice: '../m4/Hourly'" in capsys.readouterr().err

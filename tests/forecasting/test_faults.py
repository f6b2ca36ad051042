"""Bad CSVs, settings and arguments of `transduce forecast`: one line each, nothing written."""

import shutil
from datetime import datetime, timedelta

import pytest

from tests.helpers.forecasting import write_sine
from transduce.cli.main import main


def one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert err and "Traceback" not in "\n".join(err)
    return err[-1]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny patch forecaster trained for one epoch (read-only for the tests)."""
    root = tmp_path_factory.mktemp("forecast")
    csv = write_sine(root / "sine.csv")
    run = root / "run"
    assert (
        main(
            [
                "forecast",
                "train",
                f"csv={csv}",
                "input_length=48",
                "horizon=12",
                "d_model=16",
                "num_heads=2",
                "d_ff=32",
                "num_encoder_layers=1",
                "patch_len=8",
                "stride=4",
                "max_epochs=1",
                "threads=1",
                "--run-dir",
                str(run),
            ]
        )
        == 0
    )
    return run, csv


@pytest.mark.parametrize(
    "setting, named",
    [
        ("dropout=2", "dropout"),
        ("lr=nan", "lr"),
        ("num_heads=0", "num_heads"),
        ("horizon=100000000", "horizon"),
        ("head_dropout=-1", "head_dropout"),
    ],
)
def test_invalid_settings_are_refused_before_anything_is_written(tmp_path, capsys, setting, named):
    csv = write_sine(tmp_path / "sine.csv")
    run = tmp_path / "run"
    assert main(["forecast", "train", f"csv={csv}", setting, "--run-dir", str(run)]) == 2
    assert one_line(capsys).startswith(f"transduce: error: command line {setting}: {named} ")
    assert not run.exists()


def test_resuming_on_other_data_is_refused(trained, tmp_path, capsys):
    run, _ = trained
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    other = write_sine(tmp_path / "other.csv", seed=5)
    assert main(["forecast", "train", "--run-dir", str(copy), f"csv={other}", "max_epochs=2"]) == 2
    assert "trained on other data than this run's settings give" in one_line(capsys)


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def sine_text(tmp_path, **kwargs):
    return write_sine(tmp_path / "base.csv", **kwargs).read_text(encoding="utf-8")


def test_two_columns_of_one_name_are_refused(trained, tmp_path, capsys):
    run, _ = trained
    lines = sine_text(tmp_path).splitlines()
    lines[0] = "date,temp,temp"
    csv = write(tmp_path / "dup.csv", "\n".join(lines) + "\n")
    assert main(["forecast", "predict", str(run), "--csv", str(csv)]) == 2
    assert "names column 'temp' more than once" in one_line(capsys)


def test_a_byte_order_mark_is_not_part_of_the_date_column(trained, tmp_path, capsys):
    run, _ = trained
    csv = write(tmp_path / "bom.csv", "\ufeff" + sine_text(tmp_path))
    assert main(["forecast", "predict", str(run), "--csv", str(csv)]) == 0
    assert capsys.readouterr().out.startswith("date,load,temp\n")


def test_a_text_column_that_is_not_used_is_ignored(trained, tmp_path, capsys):
    run, _ = trained
    lines = sine_text(tmp_path).splitlines()
    lines = [lines[0] + ",note"] + [line + ",sunny" for line in lines[1:]]
    csv = write(tmp_path / "note.csv", "\n".join(lines) + "\n")
    assert main(["forecast", "predict", str(run), "--csv", str(csv)]) == 0
    # ... and a text column that is used names the way out
    assert (
        main(
            [
                "forecast",
                "train",
                f"csv={csv}",
                "max_epochs=1",
                "input_length=48",
                "horizon=12",
                "--run-dir",
                str(tmp_path / "new"),
            ]
        )
        == 2
    )
    assert "column 'note' holds 'sunny', not a number" in (line := one_line(capsys))
    assert "leave the column out (columns=" in line


def test_a_quoted_field_with_a_line_break_is_not_read_as_a_number(trained, tmp_path, capsys):
    run, _ = trained
    lines = sine_text(tmp_path).splitlines()
    date, _, temp = lines[5].split(",")
    lines[5] = f'{date},"1\n2",{temp}'
    csv = write(tmp_path / "quoted.csv", "\n".join(lines) + "\n")
    assert main(["forecast", "predict", str(run), "--csv", str(csv)]) == 2
    assert f"{csv}:6: column 'load' holds '1\\n2', not a number" in one_line(capsys)


def test_dates_with_and_without_a_time_zone_are_refused(trained, tmp_path, capsys):
    run, _ = trained
    lines = sine_text(tmp_path).splitlines()
    date, rest = lines[3].split(",", 1)
    lines[3] = f"{date}+00:00,{rest}"
    csv = write(tmp_path / "tz.csv", "\n".join(lines) + "\n")
    assert main(["forecast", "predict", str(run), "--csv", str(csv)]) == 2
    assert f"{csv}:4: date" in (line := one_line(capsys)) and "time zone" in line


def test_forecast_dates_past_year_9999_are_one_line(trained, tmp_path, capsys):
    run, _ = trained
    rows = ["date,load,temp"] + [
        f"9999-12-{d:02d} {h:02d}:00:00,1.0,2.0" for d in (30, 31) for h in range(24)
    ]
    csv = write(tmp_path / "late.csv", "\n".join(rows) + "\n")
    assert main(["forecast", "predict", str(run), "--csv", str(csv)]) == 2
    assert "go past the year 9999" in one_line(capsys)


def test_a_gap_in_the_history_is_one_line_naming_its_row(trained, tmp_path, capsys):
    run, _ = trained
    rows = ["date,load,temp"] + [
        f"2021-01-{d:02d} {h:02d}:00:00,1.0,2.0" for d in (1, 2, 3) for h in range(24)
    ]
    del rows[30]  # 2021-01-02 05:00, the file's line 31
    csv = write(tmp_path / "gap.csv", "\n".join(rows) + "\n")
    assert main(["forecast", "predict", str(run), "--csv", str(csv)]) == 2
    assert (
        f"{csv}:31: date 2021-01-02 06:00:00 follows 2021-01-02 04:00:00, but the series "
        "is hourly" in one_line(capsys)
    )


@pytest.mark.parametrize(
    "written, step, first, second",
    [
        ("%Y-%m-%d", timedelta(days=1), "2021-12-02", "2021-12-03"),  # daily: no time
        ("%Y-%m-%dT%H:%MZ", timedelta(hours=1), "2021-10-03T14:00Z", "2021-10-03T15:00Z"),
    ],
)
def test_forecast_dates_are_written_as_the_file_writes_its_dates(
    trained, tmp_path, capsys, written, step, first, second
):
    run, _ = trained
    rows = ["date,load,temp"] + [
        f"{datetime(2021, 10, 1) + step * i:{written}},1.0,2.0" for i in range(62)
    ]
    csv = write(tmp_path / "dates.csv", "\n".join(rows) + "\n")
    assert main(["forecast", "predict", str(run), "--csv", str(csv)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith(f"{first},") and out[2].startswith(f"{second},")


def test_a_folder_that_is_not_a_run_is_named_with_what_to_give(tmp_path, capsys):
    assert main(["forecast", "test", str(tmp_path)]) == 2
    assert one_line(capsys) == (
        f"transduce: error: {tmp_path}/checkpoints/best.pt: no such "
        "checkpoint; give a run directory that training has saved "
        "a checkpoint in"
    )
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize("value", ["0", "-5"])
def test_drop_last_must_be_a_positive_batch_size(trained, capsys, value):
    run, _ = trained
    with pytest.raises(SystemExit) as exit_:
        main(["forecast", "test", str(run), "--drop-last", value])
    assert exit_.value.code == 2
    assert "is not a whole number of at least 1" in capsys.readouterr().err
    assert not (run / "test_results.json").exists()


def test_values_that_overflow_the_model_are_refused_in_one_line_everywhere(
    trained, tmp_path, capsys
):
    """Rows of 1e20 pass the float32 input check but overflow RevIN's variance: the forecast
    would be inf or NaN. predict says so in one line and writes nothing; the server answers
    422 with the same words at /forecast and /explain/forecast, and keeps serving."""
    from fastapi.testclient import TestClient

    import transduce
    from transduce.api.describe import describe
    from transduce.serve.app import create_app

    run, csv = trained
    lines = csv.read_text().splitlines()
    big = [lines[0]] + [
        ",".join([r.split(",")[0]] + [f"{float(v) * 1e20:.6g}" for v in r.split(",")[1:]])
        for r in lines[-48:]
    ]
    rows = tmp_path / "big.csv"
    rows.write_text("\n".join(big) + "\n")
    out = tmp_path / "next.csv"
    assert main(["forecast", "predict", str(run), "--csv", str(rows), "--output", str(out)]) == 2
    message = one_line(capsys)
    assert "overflow the model's float32 arithmetic" in message and "divide by a power" in message
    assert not out.exists()
    model = transduce.load(run)
    with TestClient(create_app(model, describe(str(run), model))) as client:
        for path in ("/forecast", "/explain/forecast"):
            answer = client.post(path, json={"csv": "\n".join(big) + "\n"})
            assert answer.status_code == 422, answer.text
            assert "overflow the model's float32 arithmetic" in answer.json()["error"]
        fine = client.post("/forecast", json={"csv": "\n".join([lines[0]] + lines[-48:]) + "\n"})
        assert fine.status_code == 200 and len(fine.json()["forecast"]) == 12

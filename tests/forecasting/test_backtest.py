"""`forecast backtest`: one config scored on folds that end before the test split."""

import json

import pytest

from tests.helpers.forecasting import write_sine
from transduce.cli.main import main
from transduce.errors import UserError
from transduce.tasks.forecasting.folds import fold_borders

# a sine of 600 hourly rows split 70/10/20: train [0, 420), validation [420, 480), test [480, 600)
TINY = ["input_length=48", "horizon=12", "model=linear", "lr=0.01", "max_epochs=2", "threads=1"]


def test_folds_step_back_from_the_test_split():
    # exchange_rate's split (7588 rows, 70/10/20)
    assert fold_borders(7588, "ratio", 3) == [
        (3794, 4554, 6071),
        (3034, 3794, 5311),
        (2274, 3034, 4551),
    ]
    # fold 1's test split ends where the protocol's begins; --step moves the next one back
    assert fold_borders(7588, "ratio", 2, step=1517) == [(3794, 4554, 6071), (2277, 3037, 4554)]
    # ETTh1: 12/4/4 months, so only two folds keep a training row
    assert fold_borders(17420, "ett_hour", 2) == [(5760, 8640, 11520), (2880, 5760, 8640)]
    with pytest.raises(UserError, match="fold 3 would have no row to train on; at most 2"):
        fold_borders(17420, "ett_hour", 3)
    with pytest.raises(UserError, match="--folds must be at least 1"):
        fold_borders(7588, "ratio", 0)
    with pytest.raises(UserError, match="--step must be at least 1"):
        fold_borders(7588, "ratio", 2, step=0)


def backtest(tmp_path, csv, name, *extra):
    run = tmp_path / name
    assert main(["forecast", "backtest", f"csv={csv}", *TINY, *extra, "--run-dir", str(run)]) == 0
    return run, json.loads((run / "backtest.json").read_text())


def test_backtest_reads_no_row_of_the_test_split_and_resumes(tmp_path, capsys):
    csv = write_sine(tmp_path / "sine.csv")
    lines = csv.read_text().splitlines()
    wild = tmp_path / "wild.csv"  # the protocol's test rows (480..) replaced by huge values
    wild.write_text(
        "\n".join(lines[:481] + [line.split(",")[0] + ",1e9,-1e9" for line in lines[481:]]) + "\n"
    )
    run, result = backtest(tmp_path, csv, "sine", "--folds", "2")
    _, on_wild = backtest(tmp_path, wild, "wild", "--folds", "2")
    assert [f["split"] for f in result["folds"]] == ["rows:300,360,480", "rows:240,300,420"]
    assert result["step"] == 60  # the validation split's length
    assert [f["mse"] for f in result["folds"]] == [f["mse"] for f in on_wild["folds"]]
    assert result["folds"][0]["test_dates"] == ["2021-01-16 00:00:00", "2021-01-20 23:00:00"]
    for fold in result["folds"]:  # each fold is a run of its own, scored as forecast test does
        assert fold["windows"] == 120 - 12 + 1
        tested = json.loads((run / f"fold_{fold['fold']}" / "test_results.json").read_text())
        assert tested["mse"] == fold["mse"] and tested["mae"] == fold["mae"]
    assert result["mean"]["mse"] == pytest.approx(sum(f["mse"] for f in result["folds"]) / 2)
    assert (run / "backtest.png").stat().st_size > 10_000
    out = capsys.readouterr().out
    assert "fold 2: test rows 420-539" not in out  # fold 2's test rows are 300..419
    assert "fold 2: test rows 300-419" in out and "backtest mean over 2 folds" in out

    def checkpoints():
        return {p: p.stat().st_mtime_ns for p in run.glob("fold_*/checkpoints/*")}

    before = checkpoints()
    _, again = backtest(tmp_path, csv, "sine", "--folds", "2")  # resumes: nothing retrained
    assert again["folds"] == result["folds"]
    assert checkpoints() == before and len(before) >= 2


def test_folds_trained_two_at_a_time_score_as_one_at_a_time(tmp_path, capsys):
    """--jobs 2: each fold in a process of its own (output in RUN_DIR/fold_K.log), the
    cores shared out when threads is unset; the figures are the ones of --jobs 1."""
    import os

    csv = write_sine(tmp_path / "sine.csv")
    settings = [s for s in TINY if s != "threads=1"]
    _, alone = backtest(tmp_path, csv, "alone", "--folds", "3", "threads=1")
    run = tmp_path / "jobs"
    assert (
        main(
            [
                "forecast",
                "backtest",
                f"csv={csv}",
                *settings,
                "--folds",
                "3",
                "--jobs",
                "2",
                "--run-dir",
                str(run),
            ]
        )
        == 0
    )
    together = json.loads((run / "backtest.json").read_text())
    assert [f["mse"] for f in together["folds"]] == [f["mse"] for f in alone["folds"]]
    assert [f["val_mse"] for f in together["folds"]] == [f["val_mse"] for f in alone["folds"]]
    for k in (1, 2, 3):
        assert "reached max_epochs=2" in (run / f"fold_{k}.log").read_text()
        assert (
            f"threads: {max(1, os.cpu_count() // 2)}"
            in (run / f"fold_{k}" / "config.yaml").read_text()
        )
    out, err = capsys.readouterr()
    assert "3 folds, 2 at a time" in out
    assert "backtest folds: 100%" in err and "3/3" in err  # a bar over the folds
    # a fold's own refusal (here: resumed with another rate) reaches the command's error
    assert (
        main(
            [
                "forecast",
                "backtest",
                f"csv={csv}",
                *settings,
                "lr=0.02",
                "--folds",
                "3",
                "--jobs",
                "2",
                "--run-dir",
                str(run),
            ]
        )
        != 0
    )
    err = [
        line
        for line in capsys.readouterr().err.strip().splitlines()
        if not line.startswith("backtest folds:")
    ]  # the bar, drawn before the refusal
    assert len(err) == 1 and "started with lr=0.01, not 0.02" in err[0], err


def test_quantile_folds_report_their_risks(tmp_path):
    csv = write_sine(tmp_path / "sine.csv")
    _, result = backtest(
        tmp_path,
        csv,
        "q",
        "--folds",
        "1",
        "model=patch",
        "d_model=16",
        "d_ff=32",
        "patch_len=8",
        "stride=4",
        "quantiles=[0.1,0.5,0.9]",
    )
    fold = result["folds"][0]
    assert set(fold["rho_risk"]) == {"0.1", "0.5", "0.9"} and "0.1-0.9" in fold["coverage"]
    assert result["mean"]["rho_risk"] == fold["rho_risk"]


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ["--folds", "6"],
            "--folds 6 with --step 60: fold 6 would have no row to train on; at most 5 folds fit",
        ),
        (["--folds", "0"], "--folds must be at least 1"),
        (["--step", "0"], "--step must be at least 1"),
        (["--jobs", "0"], "--jobs must be at least 1"),
        (["--folds", "2", "--step", "200", "input_length=100"], "fold 2 (split=rows:100,160,280)"),
    ],
)
def test_refusals_write_nothing(tmp_path, capsys, extra, message):
    csv = write_sine(tmp_path / "sine.csv")
    run = tmp_path / "bt"
    assert main(["forecast", "backtest", f"csv={csv}", *TINY, *extra, "--run-dir", str(run)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not run.exists()


def test_refuses_a_training_run_and_torchrun(tmp_path, capsys, monkeypatch):
    csv = write_sine(tmp_path / "sine.csv")
    run = tmp_path / "run"
    assert main(["forecast", "train", f"csv={csv}", *TINY, "--run-dir", str(run)]) == 0
    before = sorted(p.name for p in run.iterdir())
    assert main(["forecast", "backtest", f"csv={csv}", *TINY, "--run-dir", str(run)]) != 0
    assert "holds a training run" in capsys.readouterr().err
    assert sorted(p.name for p in run.iterdir()) == before
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert (
        main(["forecast", "backtest", f"csv={csv}", *TINY, "--run-dir", str(tmp_path / "bt")]) != 0
    )
    assert "without torchrun" in capsys.readouterr().err
    assert not (tmp_path / "bt").exists()


def test_a_backtest_stopped_while_folds_train_together_saves_each_and_starts_no_more(tmp_path):
    """--jobs 2 stopped as a terminal's Ctrl-C would (SIGINT to the command alone: its folds
    run in a process group of their own): each fold in training gets it, saves its update
    and stops; the third fold never starts; the command exits 130."""
    import os
    import signal
    import subprocess
    import sys
    import time

    csv = write_sine(tmp_path / "sine.csv")
    run = tmp_path / "bt"
    settings = [s for s in TINY if not s.startswith("max_epochs")]
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "transduce",
            "forecast",
            "backtest",
            f"csv={csv}",
            *settings,
            "max_epochs=100000",
            "patience=100000",
            "--folds",
            "3",
            "--jobs",
            "2",
            "--run-dir",
            str(run),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    deadline = time.time() + 180
    while (
        not all((run / f"fold_{k}" / "metrics.jsonl").exists() for k in (1, 2))
        and time.time() < deadline
    ):
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)  # else: waiting for 100,000 epochs
    assert process.returncode == 130, err[-2000:]
    assert "SIGINT: each fold in training saves its update and stops" in out
    for k in (1, 2):
        log = (run / f"fold_{k}.log").read_text()
        step = int(log.split("stopped at step ")[1].split(":")[0])
        assert f"stopped at step {step}: interrupted" in log  # saved (now or at validation)
        assert (run / f"fold_{k}" / "checkpoints" / f"step_{step}.pt").is_file()
    assert not (run / "fold_3" / "config.yaml").exists()
    assert err.rstrip().endswith("transduce: interrupted")

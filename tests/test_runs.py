"""The run directory's one owner: which checkpoint is used, which files are the run's own."""

import logging
import os

import pytest
import torch

from transduce import runs
from transduce.cli.main import main
from transduce.errors import UserError


def fake_run(tmp_path, names):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    for name in names:
        path = run / name
        runs.save_checkpoint(
            path,
            {
                "model": {"w": torch.tensor([float(len(name))])},
                "model_config": {},
                "kind": "translation",
                "step": 1,
            },
        )
    return run


def test_step_checkpoints_are_matched_by_their_exact_name(tmp_path):
    run = fake_run(
        tmp_path,
        [
            "checkpoints/step_9.pt",
            "checkpoints/step_10.pt",
            "checkpoints/keep_step_20.pt",
            "checkpoints/copy_of_step_30.pt",
            "checkpoints/step_40.pt.bak",
            "checkpoints/my_backup_step_50.pt",
        ],
    )
    assert [p.name for p in runs.step_checkpoints(run)] == ["step_9.pt", "step_10.pt"]
    runs.prune(run, keep_last=1)
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == [
        "copy_of_step_30.pt",
        "keep_step_20.pt",
        "my_backup_step_50.pt",
        "step_10.pt",
        "step_40.pt.bak",
    ]


@pytest.mark.parametrize(
    "names, expected",
    [
        (["averaged.pt", "checkpoints/best.pt", "checkpoints/step_3.pt"], "averaged.pt"),
        (["checkpoints/best.pt", "checkpoints/step_3.pt"], "checkpoints/best.pt"),
        (
            ["checkpoints/step_3.pt", "checkpoints/step_12.pt", "checkpoints/keep_step_99.pt"],
            "checkpoints/step_12.pt",
        ),
    ],
)
def test_the_checkpoint_a_run_directory_gives(tmp_path, names, expected):
    run = fake_run(tmp_path, names)
    assert runs.find_checkpoint(run) == (run / expected, run)
    assert runs.find_checkpoint(run / expected) == (run / expected, run)


def test_an_averaged_model_older_than_the_newest_checkpoint_is_warned_about(tmp_path, caplog):
    run = fake_run(tmp_path, ["averaged.pt", "checkpoints/step_3.pt"])
    os.utime(run / "averaged.pt", (1, 1))
    with caplog.at_level(logging.WARNING, "transduce"):
        runs.find_checkpoint(run)
    assert "averaged.pt is older than" in caplog.text and "step_3.pt" in caplog.text


def test_average_says_when_it_has_fewer_checkpoints_than_asked(tmp_path, caplog):
    run = fake_run(tmp_path, ["checkpoints/step_1.pt", "checkpoints/step_2.pt"])
    with caplog.at_level(logging.WARNING, "transduce"):
        out = runs.average_run(run, last=5)
    assert "has 2 step checkpoints, fewer than --last 5" in caplog.text
    assert runs.load_checkpoint(out)["averaged"] == ["step_1.pt", "step_2.pt"]


def test_a_checkpoint_of_another_kind_is_refused(tmp_path):
    run = fake_run(tmp_path, ["checkpoints/best.pt"])
    with pytest.raises(UserError, match="holds a translation model, not a forecast model"):
        runs.load_checkpoint(run / "checkpoints" / "best.pt", "forecast")


def test_translate_average_and_export_name_the_checkpoint_they_use(trained_run, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("twelve\n", encoding="utf-8")
    assert main(["translate", str(trained_run), "--input", str(source), "--beam", "1"]) == 0
    assert f"using {trained_run / 'checkpoints' / 'best.pt'}" in capsys.readouterr().err
    assert (
        main(["average", str(trained_run), "--last", "2", "--output", str(tmp_path / "avg.pt")])
        == 0
    )
    assert "averaging step_8.pt, step_12.pt" in capsys.readouterr().err


def test_a_run_of_another_command_is_named_and_left_untouched(demo_run, forecast_run, capsys):
    forecast = forecast_run[0]

    def files():
        return sorted(str(p) for run in (demo_run, forecast) for p in run.rglob("*"))

    before = files()
    for argv, message in [
        (
            ["train", "--run-dir", str(demo_run)],
            f"{demo_run}: a run of transduce demo, not of transduce train; give a new "
            "--run-dir, or resume it with transduce demo",
        ),
        (
            ["forecast", "train", "--run-dir", str(demo_run)],
            "a run of transduce demo, not of transduce forecast train",
        ),
        (
            ["demo", "--out", str(forecast)],
            f"{forecast}: a run of transduce forecast train, not of transduce demo",
        ),
    ]:
        assert main(argv) == 2
        assert message in capsys.readouterr().err
    assert files() == before


def test_the_record_read_for_its_kind_serves_the_load_after_it_once(tmp_path, monkeypatch):
    path = tmp_path / "model.pt"
    record = {"model": {"w": torch.ones(2)}, "model_config": {}, "kind": "translation"}
    runs.save_checkpoint(path, record)
    reads = []
    real_load = torch.load
    monkeypatch.setattr(torch, "load", lambda *a, **k: reads.append(1) or real_load(*a, **k))
    assert runs.checkpoint_kind(path) == "translation"
    assert runs.load_checkpoint(path)["model"]["w"].tolist() == [1.0, 1.0]
    assert len(reads) == 1  # the look and the load read the file once
    runs.load_checkpoint(path)
    assert len(reads) == 2  # used once, then read again
    # a file replaced after the look is read anew, never served from the look
    assert runs.checkpoint_kind(path) == "translation"
    runs.save_checkpoint(path, {**record, "kind": "forecast"})
    assert runs.load_checkpoint(path)["kind"] == "forecast"

import pytest
import torch

from transduce.cli.main import main
from transduce.errors import UserError
from transduce.runs import (
    DamagedCheckpoint,
    average_checkpoints,
    load_checkpoint,
    save_checkpoint,
)


def fake_checkpoint(path, value, tokenizer="abc"):
    save_checkpoint(
        path,
        {
            "model": {"w": torch.full((2, 2), value), "steps": torch.tensor(7)},
            "model_config": {"src_vocab_size": 5},
            "tokenizer": tokenizer,
        },
    )
    return path


def test_average_equals_the_hand_average(tmp_path):
    paths = [fake_checkpoint(tmp_path / f"step_{i}.pt", v) for i, v in enumerate([1.0, 2.0, 6.0])]
    averaged = average_checkpoints(paths)
    torch.testing.assert_close(averaged["model"]["w"], torch.full((2, 2), 3.0))
    assert averaged["model"]["steps"].item() == 7  # integer buffers are copied, not averaged


def test_checkpoints_of_different_runs_are_refused(tmp_path):
    paths = [
        fake_checkpoint(tmp_path / "a.pt", 1.0),
        fake_checkpoint(tmp_path / "b.pt", 2.0, tokenizer="other"),
    ]
    with pytest.raises(UserError, match="another run"):
        average_checkpoints(paths)


def test_average_command_on_a_trained_run(config, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", str(config), "--run-dir", str(run)]) == 0
    assert main(["average", str(run), "--last", "2"]) == 0
    averaged = load_checkpoint(run / "averaged.pt")["model"]
    last_two = [load_checkpoint(run / f"checkpoints/step_{s}.pt")["model"] for s in (8, 12)]
    for key, value in averaged.items():
        if value.is_floating_point():
            torch.testing.assert_close(value, (last_two[0][key] + last_two[1][key]) / 2)
    # a folder as --output: one line, before any work, and nothing written
    capsys.readouterr()
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["average", str(run), "--output", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"transduce: error: {tmp_path}: is a folder; give --output a file name"
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_foreign_file_is_not_loaded(tmp_path, capsys):
    (tmp_path / "x.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(DamagedCheckpoint, match="not a transduce checkpoint"):
        load_checkpoint(tmp_path / "x.pt")

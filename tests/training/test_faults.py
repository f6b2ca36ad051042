"""What a user (or a crash) can do to a translation run: each ends in one line, loses no
work, and leaves the run directory usable."""

import os
import stat
import subprocess
import sys

import pytest
import torch
import yaml

from transduce import runs
from transduce.cli.main import main
from transduce.runs import load_checkpoint
from transduce.runs.state import _holder
from transduce.tasks.translation.loading import load_translation


def train(config, run_dir, *settings):
    return main(["train", str(config), *settings, "--run-dir", str(run_dir)])


def one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert err, "no error line"
    assert "Traceback" not in "\n".join(err)
    return err[-1]


def test_no_pair_surviving_filtering_stops_at_once_and_writes_nothing(config, tmp_path, capsys):
    run = tmp_path / "run"
    assert train(config, run, "max_len=1") == 2
    line = one_line(capsys)
    assert "no training pair survives filtering: all 300 dropped (300 longer than 1" in line
    assert not run.exists()


@pytest.mark.parametrize(
    "setting, named",
    [
        ("dropout=1.5", "dropout"),
        ("dropout=-0.5", "dropout"),
        ("num_heads=0", "num_heads"),
        ("num_heads=-2", "num_heads"),
        ("d_model=0", "d_model"),
        ("num_encoder_layers=0", "num_encoder_layers"),
        ("num_decoder_layers=0", "num_decoder_layers"),
        ("vocab_size=5", "vocab_size"),
        ("spm_model_type=foo", "spm_model_type"),
        ("lr=-1", "lr"),
        ("lr=nan", "lr"),
        ("label_smoothing=2", "label_smoothing"),
        ("patience=-1", "patience"),
        ("max_minutes=-1", "max_minutes"),
        ("valid_bleu_sentences=-1", "valid_bleu_sentences"),
        ("max_ratio=0", "max_ratio"),
        ("threads=-1", "threads"),
        ("bpe_dropout=1", "bpe_dropout"),
        ("bpe_dropout=-0.1", "bpe_dropout"),
        ("weight_decay=-0.01", "weight_decay"),
        ("weight_decay=1", "weight_decay"),
    ],
)
def test_invalid_values_are_refused_before_anything_is_written(
    config, tmp_path, capsys, setting, named
):
    run = tmp_path / "run"
    assert train(config, run, setting) == 2
    line = one_line(capsys)
    assert line.startswith(f"transduce: error: command line {setting}: {named} "), line
    assert not run.exists()


def test_bpe_dropout_needs_a_bpe_tokenizer():
    from transduce.tasks.translation.config import TrainConfig

    assert TrainConfig(bpe_dropout=0.1).problems() == []
    assert [
        key for key, _ in TrainConfig(bpe_dropout=0.1, spm_model_type="unigram").problems()
    ] == ["bpe_dropout"]


def test_an_invalid_value_from_a_file_names_the_file(config, tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(config.read_text() + "dropout: 1.5\n", encoding="utf-8")
    assert main(["train", str(bad), "--run-dir", str(tmp_path / "run")]) == 2
    assert f"error: {bad}: dropout must be" in one_line(capsys)


def test_a_corrected_command_then_works_on_the_same_run_dir(config, tmp_path, capsys):
    run = tmp_path / "run"
    assert train(config, run, "max_len=1") == 2
    assert train(config, run, "max_steps=2", "valid_every=2") == 0
    assert (run / "checkpoints" / "step_2.pt").exists()


def test_an_empty_run_dir_is_refused(config, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(tmp_path))
    assert main(["train", str(config), "--run-dir", ""]) == 2
    assert "--run-dir is empty" in one_line(capsys)
    assert sorted(os.listdir(tmp_path)) == before


def test_a_run_dir_that_is_a_file_is_refused(config, tmp_path, capsys):
    (tmp_path / "file").write_text("mine")
    assert train(config, tmp_path / "file") == 2
    assert "is a file where --run-dir needs a folder" in one_line(capsys)
    assert (tmp_path / "file").read_text() == "mine"


def test_a_run_dir_that_cannot_be_written_is_refused(config, tmp_path, capsys, monkeypatch):
    # Tests run as root, whom permissions do not stop: ask os.access as a user would.
    run = tmp_path / "run"
    run.mkdir()
    monkeypatch.setattr("transduce.io.os.access", lambda path, mode: False)
    assert train(config, run) == 2
    assert "not writable; give --run-dir a folder you may write in" in one_line(capsys)
    assert list(run.iterdir()) == []


def test_the_filesystem_refusing_a_write_is_one_line(config, tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoints").write_text("in the way")  # the checkpoint folder cannot be made
    assert train(config, run, "max_steps=2", "valid_every=2") == 1
    line = one_line(capsys)
    assert "checkpoints" in line and line.startswith("transduce: error: ")


def test_a_second_writer_is_refused_naming_the_holder(config, tmp_path, capsys):
    run = tmp_path / "run"
    with runs.lock(run):
        assert train(config, run, "max_steps=2") == 2
        line = one_line(capsys)
        assert f"in use by process {os.getpid()}" in line
    assert train(config, run, "max_steps=2", "valid_every=2") == 0  # released on exit


def test_two_trainings_on_one_directory_exactly_one_proceeds(config, tmp_path):
    run = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "transduce",
        "train",
        str(config),
        "max_steps=30",
        "valid_every=30",
        "--run-dir",
        str(run),
    ]
    processes = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in processes]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    refused = next(err for code, err in results if code == 2)
    assert "in use by process" in refused and "Traceback" not in refused
    state = load_checkpoint(run / "checkpoints" / "step_30.pt")
    assert state["tokenizer"] == load_translation(run, verbose=False).tokenizer.fingerprint


def test_a_lock_left_by_a_killed_process_does_not_stick(config, tmp_path):
    run = tmp_path / "run"
    script = (
        "import sys, time\nfrom transduce import runs\nheld = runs.lock(sys.argv[1])\n"
        "held.__enter__()\nprint('held', flush=True)\ntime.sleep(60)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script, str(run)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().strip() == "held"
    holder.kill()
    holder.wait()
    assert (run / runs.LOCK).exists()
    assert train(config, run, "max_steps=2", "valid_every=2") == 0


def test_a_validation_line_longer_than_the_positions_is_cut_not_fatal(
    config, corpus, tmp_path, capsys
):
    with open(corpus / "val.en", "a", encoding="utf-8") as f:
        f.write("seven " * 9000 + "\n")
    with open(corpus / "val.de", "a", encoding="utf-8") as f:
        f.write("sieben\n")
    run = tmp_path / "run"
    assert train(config, run, "max_steps=2", "valid_every=2") == 0
    log = (run / "train.log").read_text(encoding="utf-8")
    assert "validation: 1 of 31 pairs longer than" in log
    assert (run / "checkpoints" / "best.pt").exists()


def test_a_kill_between_best_and_step_checkpoint_loses_no_best(config, tmp_path, monkeypatch):
    whole = tmp_path / "whole"
    assert train(config, whole, "max_steps=8", "valid_every=4") == 0
    writes = []
    save = runs.save_checkpoint

    def dies_after_the_first_write(path, state):
        if writes:
            raise KeyboardInterrupt  # the process dies before the second file of step 4
        save(path, state)
        writes.append(path)

    monkeypatch.setattr(runs, "save_checkpoint", dies_after_the_first_write)
    killed = tmp_path / "killed"
    assert train(config, killed, "max_steps=8", "valid_every=4") == 130
    monkeypatch.setattr(runs, "save_checkpoint", save)
    assert main(["train", "--run-dir", str(killed)]) == 0
    best = load_checkpoint(killed / "checkpoints" / "best.pt")
    expected = load_checkpoint(whole / "checkpoints" / "best.pt")
    assert best["step"] == expected["step"]
    for key in expected["model"]:
        torch.testing.assert_close(best["model"][key], expected["model"][key], rtol=0, atol=0)


def test_a_deleted_config_is_not_rewritten_by_other_settings(config, tmp_path, capsys):
    run = tmp_path / "run"
    assert train(config, run, "max_steps=2", "valid_every=2") == 0
    (run / runs.CONFIG).unlink()
    assert train(config, run, "max_steps=4", "d_model=64") == 2
    line = one_line(capsys)
    assert "step_2.pt: this run was started with model.d_model=32, not 64" in line
    assert not (run / runs.CONFIG).exists()
    assert main(["train", "--run-dir", str(run), "max_steps=4"]) == 0  # its own settings
    assert (run / "checkpoints" / "step_4.pt").exists()
    assert yaml.safe_load((run / runs.CONFIG).read_text())["model"]["d_model"] == 32


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "config.yaml: empty; delete it to resume"),
        ("d_model: [\n", "config.yaml:2: not valid YAML"),
        ("d_model: !!python/object/apply:os.system ['echo hacked']\n", "not valid YAML"),
        ("bogus_key: 3\n", "unknown config key 'bogus_key'"),
    ],
)
def test_a_damaged_run_config_is_one_line(config, tmp_path, capsys, text, message):
    run = tmp_path / "run"
    assert train(config, run, "max_steps=2", "valid_every=2") == 0
    (run / runs.CONFIG).write_text(text, encoding="utf-8")
    assert main(["train", "--run-dir", str(run), "max_steps=4"]) == 2
    assert message in one_line(capsys)


def test_a_config_file_that_is_not_utf8_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"d_model: 32\n# caf\xe9\n")
    assert main(["train", str(bad), "--run-dir", str(tmp_path / "run")]) == 2
    assert f"{bad}: not UTF-8 text" in one_line(capsys)


def test_litter_of_a_killed_run_is_swept_on_resume(config, tmp_path):
    run = tmp_path / "run"
    assert train(config, run, "max_steps=2", "valid_every=2") == 0
    litter = [run / "checkpoints" / ".step_4.pt.abcd_123.tmp", run / ".config.yaml.x1y2z3w4.tmp"]
    for path in litter:
        path.write_bytes(b"half")
    (run / ".spm.model.q1w2e3r4.tmp").mkdir()
    (run / ".spm.model.q1w2e3r4.tmp" / "spm.vocab").write_text("half")
    mine = run / "checkpoints" / "my_notes.txt"
    mine.write_text("keep")
    assert main(["train", "--run-dir", str(run), "max_steps=4"]) == 0
    assert not any(p.exists() for p in litter) and not (run / ".spm.model.q1w2e3r4.tmp").exists()
    assert mine.read_text() == "keep"


def test_files_of_a_run_get_the_permissions_open_gives(config, tmp_path):
    old = os.umask(0o022)
    try:
        run = tmp_path / "run"
        assert train(config, run, "max_steps=2", "valid_every=2") == 0
    finally:
        os.umask(old)
    for name in (
        "config.yaml",
        "spm.model",
        "checkpoints/step_2.pt",
        "checkpoints/best.pt",
        "metrics.jsonl",
    ):
        assert stat.S_IMODE((run / name).stat().st_mode) == 0o644, name


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda s: s.pop("model_config"), "not a transduce checkpoint"),
        (lambda s: s["model_config"].update(bogus=1), "do not fit a transduce model"),
        (lambda s: s["model_config"].update(d_model="wide"), "do not fit a transduce model"),
        (lambda s: s.update(model_config=[1, 2]), "do not fit a transduce model"),
        (lambda s: s["model"].pop(next(iter(s["model"]))), "do not fit a transduce model"),
    ],
)
def test_a_checkpoint_with_a_bad_field_is_one_line(trained_run, tmp_path, capsys, damage, message):
    import shutil

    run = tmp_path / "copy"
    shutil.copytree(trained_run, run)
    path = run / "checkpoints" / "best.pt"
    state = load_checkpoint(path)
    damage(state)
    torch.save(state, path)
    source = tmp_path / "in.txt"
    source.write_text("one\n")
    assert main(["translate", str(path), "--input", str(source)]) == 2
    assert message in one_line(capsys)


def test_a_resume_from_a_damaged_step_checkpoint_is_one_line(config, tmp_path, capsys):
    run = tmp_path / "run"
    assert train(config, run, "max_steps=2", "valid_every=2") == 0
    path = run / "checkpoints" / "step_2.pt"
    state = load_checkpoint(path)
    del state["optimizer"]
    torch.save(state, path)
    assert main(["train", "--run-dir", str(run), "max_steps=4"]) == 2
    assert "step_2.pt: cannot resume from it (KeyError" in one_line(capsys)


def test_a_newest_checkpoint_cut_short_names_the_file_to_delete(config, tmp_path, capsys):
    """A step checkpoint that is not one at all (a copy cut short, a full disk): the error
    said "give a .pt file written by transduce", of a file transduce wrote. It names the
    file to delete and the checkpoint resuming then starts from."""
    run = tmp_path / "run"
    assert train(config, run, "max_steps=4", "valid_every=2") == 0
    newest = run / "checkpoints" / "step_4.pt"
    newest.write_bytes(newest.read_bytes()[:1000])
    assert main(["train", "--run-dir", str(run), "max_steps=6"]) == 2
    assert one_line(capsys) == (
        f"transduce: error: {newest}: not a transduce checkpoint "
        "(RuntimeError): the run's newest checkpoint is damaged; "
        "delete it to resume from step_2.pt, or use a new --run-dir"
    )
    newest.unlink()
    assert main(["train", "--run-dir", str(run), "max_steps=6"]) == 0
    assert runs.step_checkpoints(run)[-1].name == "step_6.pt"


def test_a_refused_writer_waits_briefly_for_the_holder_to_write_its_name(tmp_path):
    """The holder writes its name just after taking the lock; a second process that reads
    the lock file in between must not name "another process" when the name is coming."""
    import threading

    path = tmp_path / "LOCK"
    path.write_text("")

    def write_name():
        path.write_text("process 42 on host\n")

    threading.Timer(0.2, write_name).start()
    with open(path, "a+", encoding="utf-8") as handle:
        assert _holder(handle) == "process 42 on host"
    path.write_text("")
    with open(path, "a+", encoding="utf-8") as handle:
        assert _holder(handle, wait=0.05) == "another process"  # nobody writes it

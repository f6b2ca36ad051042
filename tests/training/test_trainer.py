import logging
import os
import re
import signal
import subprocess
import sys

import pytest
import torch

from tests.helpers.processes import wait_for
from transduce.cli.main import main
from transduce.runs import load_checkpoint


def train(config, run_dir, *overrides):
    return main(["train", str(config), *overrides, "--run-dir", str(run_dir)])


def weights(path):
    return load_checkpoint(path)["model"]


def assert_same_weights(a, b):
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


def test_run_directory_holds_everything(config, tmp_path, capsys):
    run = tmp_path / "run"
    assert train(config, run) == 0
    names = {p.name for p in run.iterdir()}
    assert {
        "config.yaml",
        "spm.model",
        "checkpoints",
        "metrics.jsonl",
        "train.log",
        "tensorboard",
    } <= names
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == [
        "best.pt",
        "step_12.pt",
        "step_4.pt",
        "step_8.pt",
    ]
    assert "valid_bleu" in (run / "metrics.jsonl").read_text()
    log = (run / "train.log").read_text()
    assert "training pairs: 300 kept of 300" in log
    threads = re.search(r"(\d+) (threads?) × (\d+) (process(?:es)?)$", log, re.M)
    assert threads, "the log names the threads and processes"
    assert (threads[2] == "thread") == (threads[1] == "1")
    assert (threads[4] == "process") == (threads[3] == "1")
    assert re.search(r"^.*C kernels: .*$", log, re.M), "and whether the C kernels are used"
    assert "valid_bleu" in capsys.readouterr().out


def test_training_rows_reach_the_log_file_every_log_every_updates(config, tmp_path, capsys):
    run = tmp_path / "run"
    assert train(config, run, "log_every=3") == 0
    rows = [
        line for line in (run / "metrics.jsonl").read_text().splitlines() if "train_loss" in line
    ]
    logged = [line for line in (run / "train.log").read_text().splitlines() if "train_loss" in line]
    assert len(rows) == 4 and len(logged) == 4  # steps 3, 6, 9 and 12
    assert "step 3 " in logged[0] and "lr " in logged[0] and "tokens_per_s " in logged[0]
    assert "train_loss" not in capsys.readouterr().err  # the terminal has the progress bar


def test_a_stopped_run_resumes_to_the_same_weights(config, tmp_path):
    assert train(config, tmp_path / "whole") == 0
    assert train(config, tmp_path / "parts", "max_steps=6") == 0  # stops between checkpoints
    assert train(config, tmp_path / "parts") == 0
    assert_same_weights(
        weights(tmp_path / "whole/checkpoints/step_12.pt"),
        weights(tmp_path / "parts/checkpoints/step_12.pt"),
    )


def test_a_killed_run_resumes_to_the_same_weights(config, tmp_path):
    assert train(config, tmp_path / "whole", "max_steps=40") == 0
    killed = tmp_path / "killed"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "transduce",
            "train",
            str(config),
            "max_steps=40",
            "--run-dir",
            str(killed),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for(killed / "checkpoints" / "step_8.pt", process, 120)
    os.kill(process.pid, signal.SIGKILL)  # mid-update, mid-write, wherever it is
    process.wait()
    assert not (killed / "checkpoints" / "step_40.pt").exists()
    assert train(config, killed, "max_steps=40") == 0
    assert_same_weights(
        weights(tmp_path / "whole/checkpoints/step_40.pt"),
        weights(killed / "checkpoints/step_40.pt"),
    )


def test_resuming_with_other_settings_is_refused(config, tmp_path, capsys):
    assert train(config, tmp_path / "run", "max_steps=4") == 0
    capsys.readouterr()
    assert train(config, tmp_path / "run", "d_model=64") == 2
    assert "started with model.d_model=32, not 64" in capsys.readouterr().err


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(config, tmp_path, capsys, monkeypatch):
    from transduce.tasks.translation import task as translation

    original, calls = translation.linear_label_smoothed_ce, []

    def poisoned(*args):
        calls.append(1)
        loss = original(*args)
        return loss * float("nan") if len(calls) == 6 else loss

    monkeypatch.setattr(translation, "linear_label_smoothed_ce", poisoned)
    run = tmp_path / "run"
    assert train(config, run) == 2
    stderr = capsys.readouterr().err  # also holds the progress bar and log of the run
    error = stderr.strip().splitlines()[-1]
    assert "Traceback" not in stderr and error.startswith("transduce: error: ")
    assert "loss became nan at step 6" in error and "step_4.pt" in error
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["best.pt", "step_4.pt"]


def bad_input_cases(corpus):
    def misaligned():
        lines = (corpus / "train.de").read_text(encoding="utf-8").splitlines()
        (corpus / "train.de").write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
        return "train.en: 300 lines but", "has 299"

    def empty():
        (corpus / "val.en").write_text("", encoding="utf-8")
        return "val.en: the file is empty", ""

    def invalid_utf8():
        data = (corpus / "train.en").read_bytes().split(b"\n")
        data[2] = b"caf\xe9"
        (corpus / "train.en").write_bytes(b"\n".join(data))
        return "train.en:3: invalid UTF-8", ""

    return {"misaligned": misaligned, "empty": empty, "invalid_utf8": invalid_utf8}


@pytest.mark.parametrize("case", ["misaligned", "empty", "invalid_utf8"])
def test_bad_corpora_give_one_line_and_write_nothing(corpus, config, tmp_path, capsys, case):
    expected = bad_input_cases(corpus)[case]()
    run = tmp_path / "run"
    assert train(config, run) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and all(part in error for part in expected), error
    assert not run.exists()


def test_unknown_config_key_in_the_yaml(config, tmp_path, capsys):
    config.write_text(config.read_text() + "dropuot: 0.3\n", encoding="utf-8")
    assert train(config, tmp_path / "run") == 2
    error = capsys.readouterr().err
    assert (
        "tiny.yaml: unknown config key 'dropuot'; did you mean 'dropout'? valid keys: "
        "bpe_dropout, data_dir, "
        "engine.accumulate,"
    ) in error
    assert not (tmp_path / "run").exists()


def test_wrong_value_type_in_the_yaml(config, tmp_path, capsys):
    config.write_text(config.read_text() + "max_tokens: lots\n", encoding="utf-8")
    assert train(config, tmp_path / "run") == 2
    assert "max_tokens must be a whole number, not 'lots'" in capsys.readouterr().err


def test_accumulation_makes_one_update_per_group_of_batches(config, tmp_path):
    assert (
        train(config, tmp_path / "one", "max_epochs=1", "max_steps=1000", "valid_every=1000") == 0
    )
    assert (
        train(
            config,
            tmp_path / "two",
            "max_epochs=1",
            "max_steps=1000",
            "valid_every=1000",
            "accumulate=2",
        )
        == 0
    )
    one = load_checkpoint(next((tmp_path / "one/checkpoints").glob("step_*.pt")))["step"]
    two = load_checkpoint(next((tmp_path / "two/checkpoints").glob("step_*.pt")))["step"]
    assert one > 4 and two == (one + 1) // 2


def test_patience_stops_a_run_that_no_longer_improves(config, tmp_path, monkeypatch):
    from transduce.tasks.translation import task as translation

    bleu = iter([10.0, 12.0, 11.0, 11.5, 20.0])
    monkeypatch.setattr(
        translation,
        "validate",
        lambda *args, **kwargs: {"valid_loss": 1.0, "valid_ppl": 2.72, "valid_bleu": next(bleu)},
    )
    run = tmp_path / "run"
    assert train(config, run, "patience=2", "max_steps=40") == 0
    # validations at steps 4, 8, 12, 16 score 10, 12 (best), 11, 11.5: two without a gain
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == [
        "best.pt",
        "step_12.pt",
        "step_16.pt",
        "step_4.pt",
        "step_8.pt",
    ]
    assert load_checkpoint(run / "checkpoints" / "best.pt")["step"] == 8
    assert "no valid_bleu gain in 2 validations" in (run / "train.log").read_text()


def test_keep_last_prunes_old_checkpoints(config, tmp_path):
    run = tmp_path / "run"
    assert train(config, run, "keep_last=2", "max_steps=16") == 0
    names = sorted(p.name for p in (run / "checkpoints").iterdir())
    assert names == ["best.pt", "step_12.pt", "step_16.pt"]


def test_a_spent_time_budget_resumes_to_an_immediate_stop(config, tmp_path, capsys):
    run = tmp_path / "run"
    assert train(config, run, "max_minutes=0.002", "max_steps=1000") == 0
    steps = sorted(p.name for p in (run / "checkpoints").glob("step_*.pt"))
    capsys.readouterr()
    assert train(config, run, "max_minutes=0.002", "max_steps=1000") == 0
    assert "reached max_minutes=0.002" in (run / "train.log").read_text().splitlines()[-1]
    assert sorted(p.name for p in (run / "checkpoints").glob("step_*.pt")) == steps


def test_a_config_file_in_the_flat_layout_is_compared_key_by_key(config, tmp_path, capsys):
    """config.yaml as runs before nested settings wrote it: bare keys, no sections."""
    import yaml

    run = tmp_path / "run"
    assert train(config, run, "max_steps=4") == 0
    nested = yaml.safe_load((run / "config.yaml").read_text())
    flat = {
        k: v
        for section in ("model", "engine")
        for k, v in nested.pop(section).items()
        if k not in ("max_len",)
    }
    (run / "config.yaml").write_text(yaml.safe_dump({**nested, **flat}))
    capsys.readouterr()
    assert train(config, run, "d_model=64") == 2
    assert "started with model.d_model=32, not 64" in capsys.readouterr().err


def test_bpe_dropout_trains_on_new_segmentations_and_resumes_exactly(config, tmp_path):
    assert train(config, tmp_path / "plain", "max_steps=6") == 0
    assert train(config, tmp_path / "whole", "bpe_dropout=0.1") == 0
    assert train(config, tmp_path / "parts", "bpe_dropout=0.1", "max_steps=6") == 0
    assert train(config, tmp_path / "parts", "bpe_dropout=0.1") == 0
    assert_same_weights(
        weights(tmp_path / "whole/checkpoints/step_12.pt"),
        weights(tmp_path / "parts/checkpoints/step_12.pt"),
    )
    dropped = weights(tmp_path / "parts/checkpoints/step_6.pt")
    plain = weights(tmp_path / "plain/checkpoints/step_6.pt")
    assert any(not torch.equal(dropped[k], plain[k]) for k in plain)


def test_bpe_dropout_draws_each_epoch_and_keeps_long_pairs_plain(config, tmp_path):
    from transduce.config import apply_overrides
    from transduce.config_files import load_config
    from transduce.tasks.translation.config import TrainConfig
    from transduce.tasks.translation.data import load_run_data, read_corpora
    from transduce.tasks.translation.task import TranslationTask

    cfg = load_config(TrainConfig, config, ["bpe_dropout=0.3"])
    data = load_run_data(cfg, read_corpora(cfg), tmp_path, logging.getLogger("test"))
    task = TranslationTask(cfg, data, session=None)
    first, again, second = task.segment(0), task.segment(0), task.segment(1)
    assert first == again and first != second
    assert first[0] != data.train_src and len(first[0]) == len(data.train_src)
    decode = data.tokenizer.decode
    assert [decode(ids) for ids in first[1]] == [decode(ids) for ids in data.train_tgt]
    longest = max(map(len, data.train_src))
    short = TranslationTask(apply_overrides(cfg, [f"max_len={longest}"]), data, session=None)
    src, _ = short.segment(0)
    assert max(map(len, src)) <= longest
    assert any(s == p for s, p in zip(src, data.train_src) if len(p) == longest)
    batch = task.batches(2)[0]  # the batches use the epoch's segmentation
    assert task.src == task.segment(2)[0] and all(i < len(task.src) for i in batch)


def test_weight_decay_reaches_the_optimizer_of_a_translation_run(config, tmp_path):
    assert train(config, tmp_path / "plain", "max_steps=4") == 0
    assert train(config, tmp_path / "decayed", "max_steps=4", "weight_decay=0.05") == 0
    plain = load_checkpoint(tmp_path / "plain" / "checkpoints" / "step_4.pt")
    decayed = load_checkpoint(tmp_path / "decayed" / "checkpoints" / "step_4.pt")
    assert [g["weight_decay"] for g in plain["optimizer"]["param_groups"]] == [0]
    assert [g["weight_decay"] for g in decayed["optimizer"]["param_groups"]] == [0.05, 0.0]
    assert plain["model"].keys() == decayed["model"].keys()
    assert any(not torch.equal(plain["model"][k], decayed["model"][k]) for k in plain["model"])


def test_lowercase_trains_and_validates_in_lowercase_and_translates_into_it(
    config, corpus, tmp_path, monkeypatch
):
    import transduce
    from transduce.data.tokenizer import SubwordTokenizer
    from transduce.tasks.translation import validate

    capitalised = tmp_path / "capitalised"
    capitalised.mkdir()
    for path in corpus.iterdir():
        lines = path.read_text(encoding="utf-8").splitlines()
        (capitalised / path.name).write_text(
            "".join(f"{line.capitalize()}\n" for line in lines), encoding="utf-8"
        )
    scored = []
    monkeypatch.setattr(validate, "bleu", lambda hyps, refs: scored.append(refs) or 0.0)
    for name, lowercase in (("cased", "false"), ("lower", "true")):
        assert (
            train(
                config,
                tmp_path / name,
                f"data_dir={capitalised}",
                "max_steps=4",
                f"lowercase={lowercase}",
            )
            == 0
        )
    cased, lower = (SubwordTokenizer(tmp_path / name / "spm.model") for name in ("cased", "lower"))
    upper = [
        any(c.isupper() for i in range(4, len(t)) for c in t.pieces([i])[0]) for t in (cased, lower)
    ]
    assert upper == [True, False] and (cased.lowercases, lower.lowercases) == (False, True)
    assert any(r[0].isupper() for r in scored[0])  # the cased run's first validation
    assert all(r == r.lower() for r in scored[-1])  # the lowercase run's last
    out = transduce.load(tmp_path / "lower", verbose=False).translate(["Three Hundred", "FIVE"])
    assert all(line == line.lower() for line in out)

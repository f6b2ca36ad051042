"""The README's commands and code must work as written (commands at a reduced size)."""

import re
import shlex
from pathlib import Path

import pytest

from transduce.cli.main import main

README = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```(\w*)\n(.*?)```", README, flags=re.S)
COMMANDS = [line[2:] for kind, body in BLOCKS if kind == "console"
            for line in body.splitlines() if line.startswith("$ transduce")]
COMMANDS += re.findall(r"`(transduce [^`]+)`", README)
REDUCED = ["steps=20", "batch_size=16", "held_out=20", "warmup=10"]
TINY_MODEL = ["d_model=32", "d_ff=64", "num_heads=2", "num_encoder_layers=1",
              "num_decoder_layers=1", "vocab_size=300", "max_steps=6", "valid_every=3",
              "warmup=2", "max_tokens=2000", "valid_bleu_sentences=20", "threads=1"]
PIPELINE = [line[2:] for kind, body in BLOCKS if kind == "console"
            for line in body.splitlines()
            if line.split()[2:3] in (["data"], ["train"], ["average"], ["translate"],
                                     ["evaluate"])]
COMMANDS = [c for c in COMMANDS if c not in PIPELINE]


def test_readme_opens_with_the_two_setup_commands():
    kind, body = BLOCKS[0]
    commands = [line.split("#")[0].strip() for line in body.strip().splitlines()]
    assert commands == ["make demo", "make test"]


@pytest.mark.parametrize("command", sorted(set(COMMANDS)))
def test_readme_command_runs(command, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(command)[1:]
    if "--help" in argv:
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 0
        return
    assert argv[0] == "demo", f"add a reduced form of {command!r} to this test"
    # after the README's own key=value items, so that the reduced sizes win
    last = max([i for i, a in enumerate(argv) if "=" in a and not a.startswith("-")] + [0])
    assert main(argv[: last + 1] + REDUCED + argv[last + 1 :]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("exact match:")


def test_readme_translation_commands_run_in_order(tmp_path, monkeypatch, capsys):
    """The Multi30k commands, on synthetic files of Multi30k's line counts and a tiny model."""
    from tests.data.test_multi30k import write_corpus

    assert [c.split()[1] for c in PIPELINE] == ["data", "train", "average", "translate",
                                                "evaluate"]
    write_corpus(tmp_path / "local", compress=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs").mkdir()
    for config in (Path(__file__).parents[1] / "configs").glob("*.yaml"):
        (tmp_path / "configs" / config.name).write_text(config.read_text())
    for command in PIPELINE:
        argv = shlex.split(command)[1:]
        if argv[0] == "data":
            argv += ["--from", str(tmp_path / "local")]  # no download in tests
        if argv[0] == "train":
            argv = argv[:2] + TINY_MODEL + argv[2:]
        assert main(argv) == 0, command
    assert "BLEU (lowercased)" in capsys.readouterr().out


def test_readme_python_example_runs(capsys):
    code = [body for kind, body in BLOCKS if kind == "python"]
    assert code
    for body in code:
        exec(compile(body, "README.md", "exec"), {})
    assert "torch.Size" in capsys.readouterr().out

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


def test_readme_python_example_runs(capsys):
    code = [body for kind, body in BLOCKS if kind == "python"]
    assert code
    for body in code:
        exec(compile(body, "README.md", "exec"), {})
    assert "torch.Size" in capsys.readouterr().out

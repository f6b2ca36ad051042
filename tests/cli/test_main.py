import re
import subprocess
import sys

import pytest

from transduce.cli.main import main


def run_cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "transduce", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_help_lists_the_commands():
    result = run_cli("--help")
    assert result.returncode == 0
    assert "demo" in result.stdout and "commands" in result.stdout


def test_demo_help_lists_its_settings():
    result = run_cli("demo", "--help")
    assert result.returncode == 0 and "engine.max_steps=2000" in result.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["demo", "--bogus"], "unrecognized arguments: --bogus"),
        (["translate-everything"], "invalid choice"),
        (["demo", "stepz=3"], "unknown config key 'stepz'; valid keys:"),
        (["demo", "max_steps=three"], "max_steps='three' is not a valid int"),
        (
            ["demo", "model.tie_output=maybe"],
            "tie_output='maybe' is not a valid bool (true or false)",
        ),
        (["demo", "precision=fp8"], "precision must be one of auto, bf16, fp16, fp32"),
        (["demo", "batch_size=0"], "batch_size must be at least 1"),
        (["demo", "max_steps=0"], "set a budget: max_steps, max_epochs or max_minutes"),
    ],
)
def test_bad_arguments_give_one_line_and_write_nothing(tmp_path, args, message):
    out = tmp_path / "out"
    result = run_cli(*args, "--out", str(out), cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "demo" in capsys.readouterr().out


def _actions(parser, name="transduce"):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, subparser in action.choices.items():
                yield from _actions(subparser, f"{name} {sub}")
        else:
            yield name, action


def test_every_argument_of_every_command_has_a_help_line():
    from transduce.cli.main import build_parser

    missing = [
        f"{name} {action.option_strings or action.dest}"
        for name, action in _actions(build_parser())
        if not action.help
    ]
    assert missing == []


@pytest.mark.parametrize(
    "command, cls",
    [
        (["train"], "transduce.tasks.translation.config.TrainConfig"),
        (["forecast", "train"], "transduce.tasks.forecasting.config.ForecastConfig"),
        (["demo"], "transduce.tasks.numbers.task.DemoConfig"),
    ],
)
def test_help_lists_every_setting_with_its_default_and_meaning(command, cls, capsys, monkeypatch):
    import importlib

    from transduce.cli.settings_help import setting_meanings
    from transduce.config import flatten

    module, name = cls.rsplit(".", 1)
    config = getattr(importlib.import_module(module), name)()
    assert [k for k, meaning in setting_meanings(config).items() if not meaning] == []
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    text = capsys.readouterr().out
    for key, value in flatten(config).items():
        row = re.search(rf"^  {re.escape(key)}={re.escape(str(value))} +(\S.*)$", text, re.M)
        if setting_meanings(config)[key].startswith("unused"):  # never read: not offered
            assert not row and f"  {key}=" not in text, key
            continue
        assert row, key
        assert row.group(1).startswith(setting_meanings(config)[key][:20])


def test_a_demo_folder_that_cannot_be_made_is_named_by_the_demos_flag(tmp_path):
    (tmp_path / "file").write_text("")
    result = run_cli("demo", "max_steps=1", "--out", str(tmp_path / "file" / "x"), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"transduce: error: {tmp_path / 'file'}: is a file where --output needs a folder"
    )

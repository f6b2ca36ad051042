import subprocess
import sys

import pytest

from transduce.cli.main import main


def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "transduce", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


def test_help_lists_the_commands():
    result = run_cli("--help")
    assert result.returncode == 0
    assert "demo" in result.stdout and "commands" in result.stdout


def test_demo_help_lists_its_settings():
    result = run_cli("demo", "--help")
    assert result.returncode == 0 and "engine.max_steps=2000" in result.stdout


@pytest.mark.parametrize("args, message", [
    (["demo", "--bogus"], "unrecognized arguments: --bogus"),
    (["translate-everything"], "invalid choice"),
    (["demo", "stepz=3"], "unknown config key 'stepz'; valid keys:"),
    (["demo", "max_steps=three"], "max_steps='three' is not a valid int"),
    (["demo", "precision=fp8"], "precision must be one of auto, bf16, fp16, fp32"),
    (["demo", "batch_size=0"], "batch_size must be at least 1"),
    (["demo", "max_steps=0"], "set a budget: max_steps, max_epochs or max_minutes"),
])
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

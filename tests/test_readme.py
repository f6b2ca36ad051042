"""The README's commands and code must work as written (commands at a reduced size)."""

import importlib.util
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
REDUCED = ["max_steps=20", "batch_size=16", "held_out=20", "warmup=10"]
TINY_MODEL = ["d_model=32", "d_ff=64", "num_heads=2", "num_encoder_layers=1",
              "num_decoder_layers=1", "vocab_size=300", "max_steps=6", "valid_every=3",
              "warmup=2", "max_tokens=2000", "valid_bleu_sentences=20", "threads=1"]


def console_block(marker: str) -> list[str]:
    """The commands of the console block that contains ``marker``."""
    found = [body for kind, body in BLOCKS if kind == "console" and marker in body]
    assert len(found) == 1, marker
    return [line[2:] for line in found[0].splitlines() if line.startswith("$ transduce")]


PIPELINE = console_block("transduce data multi30k")
SERVING = console_block("transduce export")
FORECAST = console_block("> next_96_hours.csv")
BLEND = console_block("next_blend.csv")
BAG = console_block("--equal")
BACKTEST = console_block("forecast backtest")
COMMANDS = [c for c in COMMANDS
            if c not in PIPELINE + SERVING + FORECAST + BLEND + BAG + BACKTEST]
TIMESERIES = Path(__file__).resolve().parents[2] / "shared" / "data" / "timeseries"


def run_console(command: str, capsys, replace=(), extra=()) -> str:
    """Run a README command line (``> FILE`` redirects standard output); return stdout."""
    for old, new in replace:
        command = command.replace(old, new)
    argv = shlex.split(command)[1:]
    target = None
    if ">" in argv:
        argv, target = argv[: argv.index(">")], argv[argv.index(">") + 1]
    last = max([i for i, a in enumerate(argv) if "=" in a and not a.startswith("-")] + [1])
    capsys.readouterr()
    assert main(argv[: last + 1] + list(extra) + argv[last + 1:]) == 0, command
    out = capsys.readouterr().out
    if target:
        Path(target).write_text(out, encoding="utf-8")
    return out


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
    """The Multi30k commands, then export and CTranslate2 serving, on synthetic files of
    Multi30k's line counts and a tiny model."""
    from tests.data.test_multi30k import write_corpus

    assert [c.split()[1] for c in PIPELINE] == ["data", "train", "tune", "translate",
                                                "evaluate"]
    assert [c.split()[1] for c in SERVING] == ["export", "translate"]
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
        if argv[0] == "tune":  # a smaller grid on the first lines of val
            argv += ["--sentences", "20", "--last", "1", "2", "--lenpen", "0.6", "1.0",
                     "--no-repeat-ngram", "0"]
        assert main(argv) == 0, command
    assert "BLEU (lowercased)" in capsys.readouterr().out
    if importlib.util.find_spec("ctranslate2") is None:
        pytest.skip("CTranslate2 not installed")
    for command in SERVING:
        run_console(command, capsys)
    lines = (tmp_path / "hyp.de").read_text(encoding="utf-8").split("\n")
    assert len(lines) == 1000 + 1  # one line per test sentence


def test_readme_forecasting_commands_run_in_order(tmp_path, monkeypatch, capsys):
    """The forecasting commands on a generated hourly series and a tiny model, then the
    blend of that run with a linear and a sparse one, then a bag of two sparse seeds."""
    from tests.forecasting.test_cli import write_sine

    assert [c.split()[2] for c in FORECAST] == ["train", "test", "predict", "plot"]
    assert [c.split()[2] for c in BLEND] == ["train", "train", "blend", "predict"]
    assert [c.split()[2] for c in BAG] == ["train", "blend"]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs").mkdir()
    for config in (Path(__file__).parents[1] / "configs").glob("forecast_*.yaml"):
        (tmp_path / "configs" / config.name).write_text(config.read_text())
    csv = write_sine(tmp_path / "series.csv", n=400)
    tiny = ["input_length=48", "horizon=12", "max_epochs=1", "threads=1"]
    patch = ["patch_len=8", "stride=4"]  # refused for the models that do not read them

    def reduced(command):
        if " train " not in command:
            return ()
        return tiny + (patch if "model=" not in command or "model=patch" in command else [])
    outputs = [run_console(command, capsys, [("PATH/ETTh1.csv", str(csv))], reduced(command))
               for command in FORECAST + BLEND + BAG]
    assert outputs[1].startswith("test mse ")
    assert "blend: validation mse" in outputs[-4]
    assert "nothing was chosen on validation" in outputs[-1]
    assert len((tmp_path / "next_blend.csv").read_text().splitlines()) == 1 + 12
    assert len((tmp_path / "next_96_hours.csv").read_text().splitlines()) == 1 + 12
    assert list(tmp_path.glob("runs/*/forecast_0.png"))


@pytest.mark.skipif(not (TIMESERIES / "exchange_rate.csv").is_file(),
                    reason="needs ../shared/data/timeseries/exchange_rate.csv")
def test_readme_backtest_prints_what_the_readme_shows(tmp_path, monkeypatch, capsys):
    """The last value on exchange_rate, plain and pulled towards the training mean: no
    training, so the figures are exact."""
    [body] = [body for kind, body in BLOCKS if kind == "console" and "forecast backtest" in body]
    parts = body.split("$ ")[1:]  # each command with the lines it prints
    assert len(parts) == len(BACKTEST) == 2
    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs").mkdir()
    config = Path(__file__).parents[1] / "configs" / "forecast_exchange_patch.yaml"
    (tmp_path / "configs" / config.name).write_text(config.read_text())
    for command, part in zip(BACKTEST, parts):
        shown = [line for line in part.splitlines()[1:] if line]
        out = run_console(command, capsys, [("PATH/", f"{TIMESERIES}/")], ["threads=1"])
        assert [line for line in out.splitlines() if line in shown] == shown


def test_readme_python_examples_run(capsys, demo_run, tmp_path, monkeypatch):
    """The README's Python blocks: the demo run is a two-update one, the forecaster trains
    one epoch of a small model on a generated series of ETTh1's length and columns."""
    import math

    code = [body for kind, body in BLOCKS if kind == "python"]
    assert len(code) == 3
    monkeypatch.chdir(tmp_path)  # runs/demo: a (two-update) demo run
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "demo").symlink_to(demo_run)
    (tmp_path / "configs").mkdir()
    config = Path(__file__).parents[1] / "configs" / "forecast_etth1_patch.yaml"
    (tmp_path / "configs" / config.name).write_text(config.read_text())
    (tmp_path / "PATH").mkdir()
    from datetime import datetime, timedelta

    start = datetime(2016, 7, 1)
    rows = [f"{start + timedelta(hours=i):%Y-%m-%d %H:%M:%S},{math.sin(i / 4):.4f}"
            for i in range(14_600)]
    (tmp_path / "PATH" / "ETTh1.csv").write_text("date,OT\n" + "\n".join(rows) + "\n")
    for body in code:
        body = body.replace("max_epochs=10", "max_epochs=1, input_length=48, d_model=8, "
                                              "num_encoder_layers=1, threads=1")
        exec(compile(body, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "torch.Size" in out and "'three', 'hundred', 'twenty', '-', 'one', '</s>'" in out
    assert "'date': '2018-03-01 08:00:00', 'OT': " in out and "'OT_q0.9'" in out
    assert (tmp_path / "next_24_hours.png").is_file()


def test_readme_demo_table_is_the_one_the_benchmark_wrote():
    """The demo's table of seeds and precisions is docs/demo_stability.md, which
    benchmarks/demo/stability.py renders from its stability.json: no figure typed twice."""
    import json

    root = Path(__file__).parents[1]
    spec = importlib.util.spec_from_file_location("stability",
                                                  root / "benchmarks/demo/stability.py")
    stability = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stability)
    summary = json.loads((root / "benchmarks/demo/stability.json").read_text(encoding="utf-8"))
    page = (root / "docs/demo_stability.md").read_text(encoding="utf-8")
    assert page == stability.table(summary["runs"], summary["command"], summary["machine"])
    assert all(stability.steadiness(r["curve"])["steady"] == r["steady"]
               for r in summary["runs"])
    rows = "\n".join(line for line in page.splitlines() if line.startswith("|"))
    assert rows in README

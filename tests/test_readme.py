"""The commands and code of the README and of the documentation's hand-written pages must
work as written (commands at a reduced size); the README's figures: test_readme_figures.py,
the text guide's commands: test_text_docs.py."""

import re
import shlex
from pathlib import Path

import pytest

from tests.helpers.docs import BLOCKS, ROOT, TEXTS, console_block, run_console
from tests.helpers.text import write_text_files
from transduce.cli.main import build_parser, main

COMMANDS = [
    line[2:]
    for kind, body in BLOCKS
    if kind == "console"
    for line in body.splitlines()
    if line.startswith("$ transduce")
]
COMMANDS += [c for text in TEXTS.values() for c in re.findall(r"`(transduce [^`]+)`", text)]
REDUCED = ["max_steps=20", "batch_size=16", "held_out=20", "warmup=10"]
TINY_MODEL = [
    "d_model=32",
    "d_ff=64",
    "num_heads=2",
    "num_encoder_layers=1",
    "num_decoder_layers=1",
    "vocab_size=300",
    "max_steps=6",
    "valid_every=3",
    "warmup=2",
    "max_tokens=2000",
    "valid_bleu_sentences=20",
    "threads=1",
]


PIPELINE = console_block("transduce data multi30k")
SERVING = console_block("transduce export")
FORECAST = console_block("> next_96_hours.csv")
BLEND = console_block("next_blend.csv")
BAG = console_block("--equal")
BACKTEST = console_block("forecast backtest")
TOUR = console_block("--output attention.html")
GLOBAL = console_block("layout=long")  # attention pictures, then the study figures
TEXT = console_block("transduce text test runs/trec")
MLM = console_block("task=mlm")
TAGGER_START = console_block("init=runs/xpos")
SHIPPED = console_block("configs/text_upos.yaml")
COMMANDS = [
    c
    for c in COMMANDS
    if c
    not in PIPELINE
    + SERVING
    + FORECAST
    + BLEND
    + BAG
    + BACKTEST
    + TOUR
    + GLOBAL
    + TEXT
    + MLM
    + TAGGER_START
    + SHIPPED
]
TIMESERIES = ROOT.parent / "shared" / "data" / "timeseries"


def test_readme_opens_with_the_two_setup_commands():
    kind, body = BLOCKS[0]
    commands = [line.split("#")[0].strip() for line in body.strip().splitlines()]
    assert commands == ["make demo", "make test"]


@pytest.mark.parametrize("command", sorted(set(COMMANDS)))
def test_readme_command_runs(command, tmp_path, monkeypatch, capsys, request):
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(command)[1:]
    if "--help" in argv:
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 0
        return
    if argv[0] in ("serve", "explain"):  # they serve until stopped: the line must parse
        assert build_parser(argv).parse_args(argv).run
        return
    if "runs/demo" in argv:  # a command on the demo's run: a two-update one stands in
        (tmp_path / "runs").mkdir()
        (tmp_path / "runs" / "demo").symlink_to(request.getfixturevalue("demo_run"))
        assert main(argv) == 0, command
        return
    assert argv[0] == "demo", f"add a reduced form of {command!r} to this test"
    # after the README's own key=value items, so that the reduced sizes win
    last = max([i for i, a in enumerate(argv) if "=" in a and not a.startswith("-")] + [0])
    assert main(argv[: last + 1] + REDUCED + argv[last + 1 :]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("exact match:")


def test_readme_translation_commands_run_in_order(tmp_path, monkeypatch, capsys):
    """The Multi30k commands, then export and CTranslate2 serving, on synthetic files of
    Multi30k's line counts and a tiny model."""
    from tests.helpers.text import write_corpus

    assert [c.split()[1] for c in PIPELINE] == ["data", "train", "tune", "translate", "evaluate"]
    assert [c.split()[1] for c in SERVING] == ["translate", "export", "translate"]
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
            argv += [
                "--sentences",
                "20",
                "--last",
                "1",
                "2",
                "--lenpen",
                "0.6",
                "1.0",
                "--no-repeat-ngram",
                "0",
            ]
        assert main(argv) == 0, command
    assert "BLEU (lowercased)" in capsys.readouterr().out
    from transduce.device import int8_supported

    where_int8 = () if int8_supported() else (("int8", "fp32"),)  # x86 CPU builds have int8
    for command in SERVING:
        run_console(command, capsys, replace=where_int8)
    for name in ("hyp_int8.de", "hyp.de"):
        lines = (tmp_path / name).read_text(encoding="utf-8").split("\n")
        assert len(lines) == 1000 + 1  # one line per test sentence


def test_readme_forecasting_commands_run_in_order(tmp_path, monkeypatch, capsys):
    """The forecasting commands on a generated hourly series and a tiny model, then the
    blend of that run with a linear and a sparse one, then a bag of two sparse seeds."""
    from tests.helpers.forecasting import write_sine

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

    outputs = [
        run_console(command, capsys, [("PATH/ETTh1.csv", str(csv))], reduced(command))
        for command in FORECAST + BLEND + BAG
    ]
    assert outputs[1].startswith("test mse ")
    assert "blend: validation mse" in outputs[-4]
    assert "nothing was chosen on validation" in outputs[-1]
    assert len((tmp_path / "next_blend.csv").read_text().splitlines()) == 1 + 12
    assert len((tmp_path / "next_96_hours.csv").read_text().splitlines()) == 1 + 12
    assert list(tmp_path.glob("runs/*/forecast_0.png"))


@pytest.mark.skipif(
    not (TIMESERIES / "exchange_rate.csv").is_file(),
    reason="needs ../shared/data/timeseries/exchange_rate.csv",
)
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


def test_readme_tour_commands_run_on_the_demo_run(demo_run, tmp_path, monkeypatch, capsys):
    """The tour's attention pictures on a (two-update) demo run; `figures` trains its toy
    models for a minute and has tests of its own (tests/viz), so here its line must parse."""
    assert [c.split()[1] for c in TOUR] == ["attention", "attention", "figures"]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "demo").symlink_to(demo_run)
    for command in TOUR[:2]:
        run_console(command, capsys)
    assert (tmp_path / "attention.png").stat().st_size > 0
    page = (tmp_path / "attention.html").read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and "three hundred twenty-one" in page
    argv = shlex.split(TOUR[2])[1:]
    assert build_parser(argv).parse_args(argv).out == "figures"


def test_python_examples_run(capsys, demo_run, tmp_path, monkeypatch):
    """Every Python block of the README and the pages: the demo run is a two-update one, the
    forecaster trains one epoch of a small model on a generated series of ETTh1's length."""
    import math

    code = {
        (name, i): body
        for name, text in TEXTS.items()
        for i, body in enumerate(re.findall(r"```python\n(.*?)```", text, flags=re.S))
    }
    assert {name for name, _ in code} >= {
        "README.md",
        "docs/learn.md",
        "docs/guides/forecasting.md",
        "docs/reference/layout.md",
    }
    monkeypatch.chdir(tmp_path)  # runs/demo: a (two-update) demo run
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "demo").symlink_to(demo_run)
    (tmp_path / "configs").mkdir()
    config = ROOT / "configs" / "forecast_etth1_patch.yaml"
    (tmp_path / "configs" / config.name).write_text(config.read_text())
    (tmp_path / "PATH").mkdir()
    from datetime import datetime, timedelta

    start = datetime(2016, 7, 1)
    rows = [
        f"{start + timedelta(hours=i):%Y-%m-%d %H:%M:%S},{math.sin(i / 4):.4f}"
        for i in range(14_600)
    ]
    (tmp_path / "PATH" / "ETTh1.csv").write_text("date,OT\n" + "\n".join(rows) + "\n")
    (tmp_path / "data" / "m4").mkdir(parents=True)  # a long table: three hourly series
    for part, steps in (("train", range(1, 301)), ("test", range(301, 349))):
        rows = [
            f"H{s},{t},{50 + 10 * s + 5 * math.sin(t / 4):.4f}" for s in (1, 2, 3) for t in steps
        ]
        text = "unique_id,ds,y\n" + "\n".join(rows) + "\n"
        (tmp_path / "data" / "m4" / f"m4_hourly_{part}.csv").write_text(text)
    write_text_files(tmp_path)  # the text guide's classifier, runs/trec
    from tests.helpers.text import TEXT_SETTINGS

    trec = ["task=classify", "train=TREC.train", "format=trec", *TEXT_SETTINGS]
    assert main(["text", "train", *trec, "--run-dir", "runs/trec"]) == 0
    namespaces: dict[str, dict] = {}  # a page's blocks build on each other, as in a notebook
    for (name, _), body in code.items():
        body = body.replace(
            "max_epochs=10",
            "max_epochs=1, input_length=48, d_model=8, num_encoder_layers=1, threads=1",
        )
        exec(compile(body, name, "exec"), namespaces.setdefault(name, {}))
    out = capsys.readouterr().out
    assert "torch.Size" in out and "'three', 'hundred', 'twenty', '-', 'one', '</s>'" in out
    assert "'date': '2018-03-01 08:00:00', 'OT': " in out and "'OT_q0.9'" in out
    assert (tmp_path / "next_24_hours.png").is_file()


def test_global_forecasting_commands_run_in_order(tmp_path, monkeypatch, capsys):
    """The forecasting guide's M4 commands on small files in M4's wide format and a tiny
    model: convert, train one global model, score it as M4 does, predict and plot a series."""
    import math

    assert [c.split()[1:3] for c in GLOBAL] == [
        ["data", "m4"],
        ["forecast", "train"],
        ["forecast", "test"],
        ["forecast", "predict"],
        ["forecast", "plot"],
    ]
    source = tmp_path / "m4"
    source.mkdir()
    lengths = [200, 260, 230]
    train = ['"V1",' + ",".join(f'"V{i}"' for i in range(2, 262))]
    test = ['"V1",' + ",".join(f'"V{i}"' for i in range(2, 50))]
    for s, n in enumerate(lengths):
        values = [100 + 10 * s + 20 * math.sin(2 * math.pi * t / 24) for t in range(n + 48)]
        cells = [f'"{v:.2f}"' for v in values[:n]] + [""] * (260 - n)
        train.append(f'"H{s + 1}",' + ",".join(cells))
        test.append(f'"H{s + 1}",' + ",".join(f'"{v:.2f}"' for v in values[n:]))
    (source / "Hourly-train.csv").write_text("\n".join(train) + "\n")
    (source / "Hourly-test.csv").write_text("\n".join(test) + "\n")
    monkeypatch.chdir(tmp_path)
    tiny = [
        "input_length=48",
        "d_model=16",
        "d_ff=32",
        "num_heads=2",
        "num_encoder_layers=1",
        "max_epochs=1",
        "batch_size=32",
        "threads=1",
    ]
    outputs = [
        run_console(
            command,
            capsys,
            [("../shared/data/m4", str(source))],
            tiny if " train " in command else (),
        )
        for command in GLOBAL
    ]
    assert "wrote 3 series" in outputs[0]
    assert outputs[2].startswith("3 series, horizon 48: sMAPE ") and "OWA" in outputs[2]
    rows = (tmp_path / "next_48_H1.csv").read_text().splitlines()
    assert rows[0] == "unique_id,ds,y,y_q0.5,y_q0.9" and len(rows) == 1 + 48
    assert rows[1].startswith("H1,201,")
    assert (tmp_path / "runs" / "m4" / "forecast_H1.png").stat().st_size > 10_000

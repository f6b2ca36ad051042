import os
import shutil
import subprocess
import sys

import pytest

from transduce.cli.main import main
from transduce.data.numbers import english, german
from transduce.runs import load_checkpoint, save_checkpoint

LINES = ["three hundred twenty-one", "", "seven thousand two", "one " * 400, "zwölf €", ""]


def test_one_output_line_per_input_line_in_order(trained_run, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    assert (
        main(
            [
                "translate",
                str(trained_run),
                "--input",
                str(source),
                "--output",
                str(out),
                "--beam",
                "2",
            ]
        )
        == 0
    )
    lines = out.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "" and len(lines) - 1 == len(LINES)  # each line ends with a newline
    for given, produced in zip(LINES, lines):
        assert (given == "") == (produced == "")  # empty in, empty out; others non-empty
    err = capsys.readouterr().err
    assert "line 4: cut to" in err  # the over-long line is cut, not lost
    assert 'line 5: "€" unknown to the model' in err  # never seen in training
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_every_precision_translates_a_file(trained_run, tmp_path, capsys, precision):
    from transduce.device import int8_supported

    if precision == "int8" and not int8_supported():
        pytest.skip("this PyTorch has no oneDNN int8 kernel")
    source = tmp_path / "in.txt"
    source.write_text("\n".join(LINES[:3]) + "\n", encoding="utf-8")
    out = tmp_path / f"{precision}.txt"
    args = ["translate", str(trained_run), "--input", str(source), "--output", str(out)]
    assert main([*args, "--precision", precision, "--device", "cpu"]) == 0
    lines = out.read_text(encoding="utf-8").split("\n")
    assert len(lines) == 4 and lines[0] and not lines[1] and lines[2]


def test_early_exit_translates_a_file_as_the_api_does(trained_run, tmp_path, monkeypatch):
    import transduce
    from transduce.decoding.translator import Translator

    asked = []
    search = Translator.search

    def spy(self, *args, **kwargs):
        asked.append(kwargs.get("early_exit", False))
        return search(self, *args, **kwargs)

    monkeypatch.setattr(Translator, "search", spy)
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(LINES[:3]) + "\n", encoding="utf-8")
    args = ["translate", str(trained_run), "--input", str(source), "--output", str(out)]
    assert main([*args, "--early-exit", "--beam", "3", "--device", "cpu"]) == 0
    model = transduce.load(trained_run, "cpu", verbose=False)
    expected = [
        t for ((t, _),) in model.search(LINES[:3], 3, model.decoding.lenpen, early_exit=True)
    ]
    assert out.read_text(encoding="utf-8").split("\n")[:3] == expected
    assert asked[0] is True


def test_standard_input_and_greedy(trained_run):
    result = subprocess.run(
        [sys.executable, "-m", "transduce", "translate", str(trained_run), "--beam", "1"],
        input="five\n\nsix hundred\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[0] and lines[2]


def test_the_command_ends_at_once_yet_every_line_reaches_a_pipe(trained_run, tmp_path):
    # `transduce translate` skips Python's teardown (os._exit, cli.main.QUICK_EXIT): what it
    # printed must still all arrive, though a pipe's buffer held it, and its status too
    source = tmp_path / "in.txt"
    source.write_text("".join(english(n) + "\n" for n in range(1, 6)), encoding="utf-8")
    command = [sys.executable, "-m", "transduce", "translate", str(trained_run), "--beam", "1"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # as most have it
    result = subprocess.run(
        [*command, "--input", str(source)], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert len(lines) == 6 and lines[-1] == "" and all(lines[:-1])
    assert "decoding with" in result.stderr
    missing = subprocess.run(
        [*command, "--input", str(tmp_path / "nothing.txt")], capture_output=True, text=True
    )
    assert missing.returncode == 2 and "nothing.txt: cannot read" in missing.stderr


def test_nbest_lists(trained_run, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("five\nsix\n", encoding="utf-8")
    assert (
        main(["translate", str(trained_run), "--input", str(source), "--beam", "3", "--nbest", "3"])
        == 0
    )
    rows = [line.split(" ||| ") for line in capsys.readouterr().out.splitlines()]
    assert [r[0] for r in rows] == ["0", "0", "0", "1", "1", "1"]
    for i in (0, 3):
        scores = [float(r[2]) for r in rows[i : i + 3]]
        assert scores == sorted(scores, reverse=True)


def test_a_checkpoint_with_another_tokenizer_is_refused(trained_run, tmp_path, capsys):
    run = tmp_path / "copy"
    (run / "checkpoints").mkdir(parents=True)
    (run / "spm.model").write_bytes((trained_run / "spm.model").read_bytes())
    state = load_checkpoint(trained_run / "checkpoints" / "best.pt")
    state["tokenizer"] = "0123456789abcdef"
    save_checkpoint(run / "checkpoints" / "best.pt", state)
    assert main(["translate", str(run / "checkpoints" / "best.pt")]) == 2
    error = capsys.readouterr().err.strip()
    assert "trained with another tokenizer" in error and len(error.splitlines()) == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["nowhere"], "no such run directory or checkpoint"),
        (["RUN", "--beam", "2", "--nbest", "3"], "--nbest between 1 and --beam"),
        (["RUN", "--input", "missing.txt"], "missing.txt: cannot read"),
        (["RUN", "--engine", "ctranslate2", "--precision", "int8"], "is for our engine"),
        (["RUN", "--engine", "ctranslate2", "--early-exit"], "--early-exit is for our engine"),
    ],
)
def test_bad_arguments(trained_run, tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    args = [str(trained_run) if a == "RUN" else a for a in args]
    assert main(["translate", *args]) == 2
    assert message in capsys.readouterr().err


def test_invalid_utf8_on_stdin_names_the_line(trained_run):
    result = subprocess.run(
        [sys.executable, "-m", "transduce", "translate", str(trained_run)],
        input=b"five\nsi\xffx\n",
        capture_output=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert b"<stdin>:2: invalid UTF-8" in result.stderr and result.stdout == b""


def test_an_empty_input_file_is_one_line_and_writes_nothing(trained_run, tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    out = tmp_path / "out.txt"
    assert main(["translate", str(trained_run), "--input", str(empty), "--output", str(out)]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "empty.txt: the file is empty" in error[0] and not out.exists()
    with open(empty, "rb") as stdin:  # the same file as standard input
        result = subprocess.run(
            [sys.executable, "-m", "transduce", "translate", str(trained_run)],
            stdin=stdin,
            capture_output=True,
            timeout=120,
        )
    assert result.returncode == 2 and b"<stdin>: the file is empty" in result.stderr
    # a pipe streams line by line: one that closes at once is no error
    result = subprocess.run(
        [sys.executable, "-m", "transduce", "translate", str(trained_run)],
        input=b"",
        capture_output=True,
        timeout=120,
    )
    assert result.returncode == 0 and result.stdout == b""


def test_pipeline_average_translate_evaluate(trained_run, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(trained_run, run)
    assert main(["average", str(run), "--last", "3"]) == 0
    source, reference = tmp_path / "src.en", tmp_path / "ref.de"
    numbers = [21, 305, 4000, 999, 77777]
    source.write_text("".join(english(n) + "\n" for n in numbers), encoding="utf-8")
    reference.write_text("".join(german(n) + "\n" for n in numbers), encoding="utf-8")
    hyp = tmp_path / "hyp.de"
    assert main(["translate", str(run), "--input", str(source), "--output", str(hyp)]) == 0
    capsys.readouterr()
    assert main(["evaluate", "--hyp", str(hyp), "--ref", str(reference)]) == 0
    report = capsys.readouterr().out
    assert "BLEU " in report and "nrefs:1|case:mixed" in report
    assert "BLEU (lowercased)" in report and "case:lc" in report and "chrF2" in report


def test_outputs_that_are_devices_are_written_into_and_kept(
    trained_run, forecast_run, tmp_path, capsys
):
    """`--output /dev/null` (here a node of the test's own) must not replace the device with
    a file, for every command that writes one output file; a full device is one line."""
    import os
    import stat

    from tests.helpers.processes import make_node

    null, full = make_node(tmp_path / "null", 3), make_node(tmp_path / "full", 7)
    source = tmp_path / "in.txt"
    source.write_text("seven\neleven\n", encoding="utf-8")
    forecast, csv = forecast_run
    commands = [
        ["translate", str(trained_run), "--input", str(source), "--output"],
        ["average", str(trained_run), "--last", "2", "--output"],
        ["forecast", "predict", str(forecast), "--csv", str(csv), "--output"],
        ["forecast", "plot", str(forecast), "--output"],
    ]
    for command in commands:
        assert main([*command, str(null)]) == 0, command
        assert stat.S_ISCHR(null.stat().st_mode), command
    capsys.readouterr()
    assert main([*commands[0], str(full)]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(err) == 1 and err[0].startswith(f"transduce: error: {full}: No space left"), err
    assert stat.S_ISCHR(full.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full", "in.txt", "null"]
    assert os.stat(null).st_rdev == os.makedev(1, 3)


def test_the_server_s_limits_hold_for_the_cli_and_the_api(trained_run, tmp_path, capsys, caplog):
    """A beam over 16 is refused and a line over 2,000 characters cut with a note, by the
    command line and the Python API as by the server: one set of limits."""
    import transduce
    from transduce.serve.app import MAX_CHARS

    source = tmp_path / "in.txt"
    source.write_text("seven " * 20_000 + "\n", encoding="utf-8")  # 120,000 characters
    assert main(["translate", str(trained_run), "--input", str(source), "--beam", "1000"]) == 2
    assert "--beam must be 1 to 16" in capsys.readouterr().err
    model = transduce.load(trained_run, verbose=False)
    with pytest.raises(ValueError, match="beam must be at most 16, not 1000"):
        model.translate("seven", beam=1000)
    with caplog.at_level("WARNING"):
        assert model.translate(["seven " * 20_000, "eight"], beam=1)[1]
    assert f"line 1: cut to {MAX_CHARS} characters" in caplog.text
    assert main(["translate", str(trained_run), "--input", str(source), "--beam", "1"]) == 0

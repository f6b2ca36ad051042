"""What the model cannot read is said, not passed over: words it never saw, control
characters (removed), lines cut. In the Python API's results, on the command line's stderr,
and in the server's answer and page (tests/serve)."""

import subprocess
import sys

import pytest

import transduce
from transduce.data.numbers import NumbersTokenizer
from transduce.decoding.sources import read_sources, without_controls


def test_control_characters_are_removed_and_counted():
    assert without_controls("sev\x00en\x07 thou\x1b[0msand\x7f") == ("seven thou[0msand", 4)
    assert without_controls("a\tb") == ("a b", 0)  # a tab is a space
    assert without_controls("zwölf — € ünïcödé") == ("zwölf — € ünïcödé", 0)


def test_the_demo_vocabulary_names_what_it_does_not_know():
    tok = NumbersTokenizer()
    sources = read_sources(
        tok, ["hello world", "<b>hi</b>", "three hundred", "321", "sev\x00en"], max_source=100
    )
    assert sources.notes[0] == [
        '"hello", "world" unknown to the model (never seen in training); its translation is a guess'
    ]
    assert sources.notes[1][0].startswith('"<", "b", ">", "hi", "</" unknown')
    assert sources.notes[2] == [] and sources.notes[3] == []
    assert sources.notes[4] == ["1 control character removed"]
    assert sources.ids[4] == tok.encode(["seven"])[0]  # read as if it were not there
    assert sources.warnings()[0].startswith('line 1: "hello"')


def test_the_api_result_carries_the_warnings(demo_run, trained_run, caplog):
    demo = transduce.load(demo_run, verbose=False)
    with caplog.at_level("WARNING"):
        out = demo.translate(["hello world", "seven"], beam=1)
    assert "hello" in out[0].warnings[0] and out[1].warnings == ()
    assert isinstance(out[0], str) and out[1] == demo.translate("seven", beam=1)
    assert 'line 1: "hello", "world" unknown to the model' in caplog.text
    listed = demo.translate("sev\x00en", beam=2, nbest=2)
    assert all(text.warnings == ("1 control character removed",) for text, _ in listed)
    subword = transduce.load(trained_run, verbose=False)  # a SentencePiece vocabulary
    assert '"€" unknown' in subword.translate("seven €", beam=1).warnings[0]


def test_the_command_line_warns_on_stderr_and_keeps_stdout_clean(demo_run):
    result = subprocess.run(
        [sys.executable, "-m", "transduce", "translate", str(demo_run), "--beam", "1"],
        input="hello world\nseven\x00\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.split("\n")) == 3  # one line out per line in
    assert 'line 1: "hello", "world" unknown to the model' in result.stderr
    assert "line 2: 1 control character removed" in result.stderr
    assert "\x00" not in result.stdout


@pytest.mark.parametrize("line", ["", "   "])
def test_empty_lines_have_no_warnings(line):
    assert read_sources(NumbersTokenizer(), [line], max_source=10).notes == [[]]

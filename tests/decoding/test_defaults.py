"""A run's own decoding: chosen on validation by `transduce tune`, used unless told otherwise."""

import json
import shutil

import pytest

from transduce import runs
from transduce.cli.main import main
from transduce.decoding import defaults
from transduce.errors import UserError
from transduce.tasks.translation.scored import Scored


@pytest.fixture
def run(trained_run, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(trained_run, copy)
    return copy


def test_without_a_file_the_papers_decoding(run):
    d = defaults.read(run)
    assert (d.beam, d.lenpen, d.no_repeat_ngram) == (5, 0.6, 0) and "paper" in d.source


@pytest.mark.parametrize(
    "text, message",
    [
        ("{", "not a JSON file"),
        ("[1]", "not a JSON object"),
        ('{"beam": "x", "lenpen": 1}', "damaged decoding settings"),
        ('{"lenpen": 1}', "damaged decoding settings"),
        ('{"beam": 0, "lenpen": 1}', "beam must be at least 1"),
        ('{"beam": 5, "lenpen": NaN}', "lenpen finite"),
    ],
)
def test_a_damaged_file_is_one_line_naming_it(run, text, message):
    (run / "decoding.json").write_text(text)
    with pytest.raises(UserError, match=message) as error:
        defaults.read(run)
    assert str(run / "decoding.json") in str(error.value)


def test_given_values_win_over_the_runs():
    base = defaults.Decoding(
        beam=4,
        lenpen=1.4,
        no_repeat_ngram=3,
        last=8,
        source="chosen on validation data, R/decoding.json",
    )
    assert defaults.resolve(base) is base
    d = defaults.resolve(base, lenpen=0.6)
    assert (d.beam, d.lenpen, d.no_repeat_ngram) == (4, 0.6, 3)
    assert d.source.startswith("lenpen given; the rest: chosen on validation data")
    assert defaults.resolve(base, 1, 0.0, 0).source == "given"


def test_tune_chooses_on_validation_and_everything_uses_it(run, capsys, caplog):
    assert (
        main(
            [
                "tune",
                str(run),
                "--last",
                "1",
                "2",
                "--lenpen",
                "0.0",
                "5.0",
                "--no-repeat-ngram",
                "0",
                "--beam",
                "3",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    stored = json.loads((run / "decoding.json").read_text())
    rows = stored["grid"]
    assert len(rows) == 4 and all(r["bleu"] >= 0 for r in rows)
    top = max(r["bleu"] for r in rows)
    best = min(
        (r for r in rows if r["bleu"] >= top - 0.1), key=lambda r: (r["looping_rate"], -r["bleu"])
    )
    assert (stored["last"], stored["lenpen"], stored["beam"]) == (best["last"], best["lenpen"], 3)
    assert (
        stored["averaged"]
        == [
            p.name
            for p in sorted((run / "checkpoints").glob("step_*.pt"), key=lambda p: int(p.stem[5:]))
        ][-best["last"] :]
    )
    assert (run / "averaged.pt").is_file() and "chosen on validation (*): the last" in out
    # translate takes the stored decoding, says so, and a given value wins
    source = run / "in.txt"
    source.write_text("five\nsix hundred\n", encoding="utf-8")
    assert main(["translate", str(run), "--input", str(source)]) == 0
    err = capsys.readouterr().err
    assert f"decoding with beam 3, α {best['lenpen']:g}" in err and "decoding.json" in err
    assert main(["translate", str(run), "--input", str(source), "--beam", "1"]) == 0
    assert "decoding with beam 1, α" in capsys.readouterr().err
    # the Python API too: its searches run with the run's settings
    import transduce

    model = transduce.load(run)
    assert model.decoding.beam == 3 and model.decoding.lenpen == best["lenpen"]
    calls = []
    search = model.search
    model.search = lambda lines, beam, lenpen, nbest, **kw: (
        calls.append((beam, lenpen)) or search(lines, beam, lenpen, nbest, **kw)
    )
    model.translate("five")
    model.translate("five", beam=2, lenpen=0.0)
    assert calls == [(3, best["lenpen"]), (2, 0.0)]


def test_average_defaults_to_the_tuned_number_of_checkpoints(run, caplog):
    (run / "decoding.json").write_text(json.dumps({"beam": 5, "lenpen": 1.0, "last": 2}))
    assert main(["average", str(run)]) == 0
    assert "averaging step_8.pt, step_12.pt" in caplog.text


@pytest.mark.parametrize(
    "args, message",
    [
        (["--last", "0"], "--last: give numbers of checkpoints of at least 1"),
        (["--lenpen", "-1"], "--lenpen: give length penalties between 0 and 5"),
        (["--beam", "0"], "--beam must be at least 1"),
    ],
)
def test_tune_refuses_bad_settings_before_translating(run, capsys, args, message):
    assert main(["tune", str(run), *args]) == 2
    assert message in capsys.readouterr().err
    assert not (run / "decoding.json").exists()


def test_tune_prefers_outputs_that_loop_less_when_scores_are_equal():
    from transduce.tasks.translation.tune import choose

    rows = [
        {"bleu": 38.48, "looping_rate": 0.006},
        {"bleu": 38.47, "looping_rate": 0.0},
        {"bleu": 30.0, "looping_rate": 0.0},
    ]
    assert choose(rows, "bleu") is rows[1]  # 0.01 BLEU is noise; 6 looping lines are not
    rows[1]["bleu"] = 38.2
    assert choose(rows, "bleu") is rows[0]  # 0.28 BLEU is a real difference


def test_tune_refuses_a_demo_run(demo_run, capsys):
    assert main(["tune", str(demo_run)]) == 2
    assert "tune chooses the decoding of translation runs" in capsys.readouterr().err


def test_tune_refuses_a_run_it_cannot_write_before_translating(run, capsys, monkeypatch):
    import os

    real = os.access
    monkeypatch.setattr(
        os,
        "access",
        lambda p, mode, *a, **k: False if str(p) == str(run) else real(p, mode, *a, **k),
    )
    monkeypatch.setattr(
        "transduce.tasks.translation.tune.Translator.search",
        lambda *a, **k: pytest.fail("translated before checking the run"),
    )
    assert main(["tune", str(run), "--last", "1", "--lenpen", "0.6", "--no-repeat-ngram", "0"]) == 2
    assert str(run) in capsys.readouterr().err


def test_the_tune_table_names_the_bleu_it_chose_by(run, capsys):
    assert (
        main(
            [
                "tune",
                str(run),
                "--last",
                "1",
                "--lenpen",
                "0.6",
                "--no-repeat-ngram",
                "0",
                "--metric",
                "bleu_tok",
                "--sentences",
                "3",
            ]
        )
        == 0
    )
    header = capsys.readouterr().out.splitlines()[0].split()
    assert header == ["last", "α", "block", "BLEU", "tok", "chrF2", "looping"]


def test_a_tuning_that_dies_resumes_from_the_settings_it_scored(
    run, trained_run, tmp_path, monkeypatch, caplog
):
    import transduce.tasks.translation.tune as tuning

    args = [
        "tune",
        str(run),
        "--last",
        "1",
        "2",
        "--lenpen",
        "0.0",
        "5.0",
        "--no-repeat-ngram",
        "0",
        "--beam",
        "2",
    ]
    score, calls = tuning._score, []

    def dies_third(translator, sources, references, lang, grid, lenpen, block, bar):
        calls.append(lenpen)
        if len(calls) == 3:
            raise KeyboardInterrupt  # Ctrl-C in the third setting
        return score(translator, sources, references, lang, grid, lenpen, block, bar)

    monkeypatch.setattr(tuning, "_score", dies_third)
    assert main(args) == 130
    assert len((run / runs.TUNE_PARTIAL).read_text().splitlines()) == 2
    assert not (run / "decoding.json").exists()
    with (run / runs.TUNE_PARTIAL).open("a") as file:
        file.write('{"made": {"beam"')  # a line cut short by the death of the process
    calls.clear()
    monkeypatch.setattr(tuning, "_score", lambda *a: calls.append(a[5]) or score(*a))
    assert main(args) == 0
    assert len(calls) == 2 and "resuming, 2 of 4 settings already scored" in caplog.text
    assert not (run / runs.TUNE_PARTIAL).exists()  # gone once the choice is written
    again = tmp_path / "again"  # the same tuning, never interrupted
    shutil.copytree(trained_run, again)
    assert main([args[0], str(again), *args[2:]]) == 0
    grids = [
        [
            {k: v for k, v in r.items() if k != "seconds"}
            for r in json.loads((d / "decoding.json").read_text())["grid"]
        ]
        for d in (run, again)
    ]
    assert grids[0] == grids[1] and len(grids[0]) == 4


def test_rows_scored_with_other_settings_are_not_reused(run, monkeypatch):
    import transduce.tasks.translation.tune as tuning

    base = ["tune", str(run), "--last", "1", "--lenpen", "0.0", "--no-repeat-ngram", "0"]
    score, calls = tuning._score, []
    monkeypatch.setattr(tuning, "_score", lambda *a: (calls.append(a[4].beam), score(*a))[1])
    monkeypatch.setattr(Scored, "done", lambda self: None)  # keep the rows
    assert main(base + ["--beam", "2"]) == 0 and main(base + ["--beam", "3"]) == 0
    assert main(base + ["--beam", "2"]) == 0
    assert calls == [2, 3]  # the third found beam 2's row; beam 3 found none
    read = tuning.validation_data  # the same number of lines, one of them changed
    monkeypatch.setattr(
        tuning,
        "validation_data",
        lambda *a: (lambda s, r, lang: (["nine"] + s[1:], r, lang))(*read(*a)),
    )
    assert main(base + ["--beam", "2"]) == 0
    assert calls == [2, 3, 2]

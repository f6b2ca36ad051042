import json

import pytest

from transduce.cli.main import main
from transduce.evaluation import corpus_scores


def test_identical_text_scores_100():
    lines = ["Ein Hund läuft über die Wiese.", "Zwei Kinder spielen."]
    scores = corpus_scores(lines, lines)
    assert scores["bleu"] == scores["bleu_lc"] == scores["chrf"] == 100.0
    assert "case:mixed" in scores["bleu_signature"] and "case:lc" in scores["bleu_lc_signature"]


def test_lowercased_bleu_forgives_case_only():
    hyps, refs = ["ein hund läuft über die wiese ."], ["Ein Hund läuft über die Wiese ."]
    scores = corpus_scores(hyps, refs)
    assert scores["bleu_lc"] == 100.0 and scores["bleu"] < 60


def test_evaluate_command(tmp_path, capsys):
    (tmp_path / "h").write_text("a b c d\n", encoding="utf-8")
    (tmp_path / "r").write_text("a b c d\n", encoding="utf-8")
    assert main(["evaluate", "--hyp", str(tmp_path / "h"), "--ref", str(tmp_path / "r"),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["bleu"] == 100.0


def test_misaligned_files(tmp_path, capsys):
    (tmp_path / "h").write_text("a\nb\n", encoding="utf-8")
    (tmp_path / "r").write_text("a\n", encoding="utf-8")
    assert main(["evaluate", "--hyp", str(tmp_path / "h"), "--ref", str(tmp_path / "r")]) == 2
    assert "2 lines but" in capsys.readouterr().err


def test_mismatched_counts_raise():
    with pytest.raises(ValueError):
        corpus_scores(["a"], [])

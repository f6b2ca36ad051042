import json
import math
from collections import Counter
from pathlib import Path

import pytest

from transduce.cli.main import main
from transduce.evaluation import corpus_scores, literature_tokenize


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
    assert (
        main(["evaluate", "--hyp", str(tmp_path / "h"), "--ref", str(tmp_path / "r"), "--json"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["bleu"] == 100.0


def test_misaligned_files(tmp_path, capsys):
    (tmp_path / "h").write_text("a\nb\n", encoding="utf-8")
    (tmp_path / "r").write_text("a\n", encoding="utf-8")
    assert main(["evaluate", "--hyp", str(tmp_path / "h"), "--ref", str(tmp_path / "r")]) == 2
    assert "2 lines but" in capsys.readouterr().err


def test_an_unknown_language_is_refused_and_an_unknown_suffix_names_none(tmp_path, capsys):
    hyp, ref = tmp_path / "h.xy", tmp_path / "r.xy"
    for path in (hyp, ref):
        path.write_text("a b c d\n", encoding="utf-8")
    assert main(["evaluate", "--hyp", str(hyp), "--ref", str(ref), "--lang", "xy"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith(
            "transduce: error: --lang xy: sacremoses has no tokenisation rules for it; give one of "
        )
        and " de, " in err
    )
    assert main(["evaluate", "--hyp", str(hyp), "--ref", str(ref), "--json"]) == 0
    assert "bleu_tok" not in json.loads(capsys.readouterr().out)  # .xy is no language


def test_mismatched_counts_raise():
    with pytest.raises(ValueError):
        corpus_scores(["a"], [])


SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "multi30k"


@pytest.mark.skipif(
    not (SHARED / "tok").is_dir(),
    reason="needs ../shared/data/multi30k (raw and official tokenised files)",
)
@pytest.mark.parametrize("lang, at_most", [("de", 1), ("en", 0), ("fr", 1)])
def test_literature_tokenisation_reproduces_the_official_files(lang, at_most):
    raw = (SHARED / f"val.{lang}").read_text(encoding="utf-8").splitlines()
    official = (SHARED / "tok" / f"val.lc.norm.tok.{lang}").read_text(encoding="utf-8").splitlines()
    differ = sum(a != b for a, b in zip(literature_tokenize(raw, lang), official))
    assert len(raw) == len(official) == 1014 and differ <= at_most  # 1, 0 and 1 of 1014


def multi_bleu(hyps, refs):
    """multi-bleu.perl's corpus BLEU: clipped 1-4-gram precisions, geometric mean, brevity
    penalty, on whitespace tokens; written out here as an independent check."""
    matches, totals, hyp_len, ref_len = [0] * 4, [0] * 4, 0, 0
    for hyp, ref in zip(hyps, refs):
        h, r = hyp.split(), ref.split()
        hyp_len, ref_len = hyp_len + len(h), ref_len + len(r)
        for n in range(1, 5):
            grams = Counter(tuple(h[i : i + n]) for i in range(len(h) - n + 1))
            ref_grams = Counter(tuple(r[i : i + n]) for i in range(len(r) - n + 1))
            matches[n - 1] += sum(min(c, ref_grams[g]) for g, c in grams.items())
            totals[n - 1] += max(len(h) - n + 1, 0)
    log_precision = sum(math.log(m / t) for m, t in zip(matches, totals)) / 4
    penalty = min(1.0, math.exp(1 - ref_len / hyp_len))
    return 100 * penalty * math.exp(log_precision)


def test_tokenised_bleu_equals_multi_bleu_on_a_known_pair():
    hyps = [
        "Ein Mann fährt ein rotes Fahrrad auf der Straße.",
        'Zwei Hunde spielen im Schnee, "glücklich".',
        "Eine Frau liest ein Buch im Park.",
    ]
    refs = [
        "Ein Mann fährt auf der Straße ein rotes Fahrrad.",
        "Zwei Hunde spielen im Schnee.",
        "Eine Frau liest im Park ein Buch.",
    ]
    scores = corpus_scores(hyps, refs, "de")
    expected = multi_bleu(literature_tokenize(hyps, "de"), literature_tokenize(refs, "de"))
    assert (
        literature_tokenize(hyps, "de")[1]
        == "zwei hunde spielen im schnee , &quot; glücklich &quot; ."
    )
    assert scores["bleu_tok"] == pytest.approx(expected, abs=0.01)
    assert "tok:none" in scores["bleu_tok_signature"]


def test_evaluate_reports_the_literature_bleu_from_the_reference_suffix(tmp_path, capsys):
    from transduce.cli.main import main

    hyp, ref = tmp_path / "hyp.de", tmp_path / "ref.de"
    hyp.write_text("Ein Mann fährt Rad.\nZwei Hunde.\n", encoding="utf-8")
    ref.write_text("Ein Mann fährt Fahrrad.\nZwei Hunde.\n", encoding="utf-8")
    assert main(["evaluate", "--hyp", str(hyp), "--ref", str(ref), "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)
    tok = tmp_path / "ref.tok"
    tok.write_text("ein mann fährt fahrrad .\nzwei hunde .\n", encoding="utf-8")
    assert (
        main(["evaluate", "--hyp", str(hyp), "--ref", str(ref), "--tok-ref", str(tok), "--json"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["bleu_tok"] == scores["bleu_tok"] > 0
    # the raw reference given as the tokenised one: its capitals could never match
    assert main(["evaluate", "--hyp", str(hyp), "--ref", str(ref), "--tok-ref", str(ref)]) == 2
    captured = capsys.readouterr()
    assert f"{ref}:1: capital letters, so no lowercased tokenised reference" in captured.err
    assert captured.out == ""


@pytest.mark.parametrize(
    "hyp, looping",
    [
        ("Vagagagagaga", True),  # "ag" five times
        ("Videospospospospospos fahren", True),  # "pos" five times
        ("Ein Mann fährt Fahrrad.", False),
        ("Kaffeeeee", True),  # one character five times
        ("Kaffee", False),
        ("ein " * 30, True),  # more than three times the source
    ],
)
def test_looping_translations_are_found(hyp, looping):
    from transduce.evaluation import is_looping, looping_rate

    assert is_looping(hyp, "A man rides a bike .") is looping
    assert looping_rate([hyp, "Ein Hund."], ["A man rides a bike .", "A dog."]) == (
        0.5 if looping else 0.0
    )

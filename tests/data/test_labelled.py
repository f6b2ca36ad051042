"""Labelled text: sentence labels (label<TAB>text, TREC) and word tags (CoNLL, CoNLL-U), and
one-line errors naming the line."""

from pathlib import Path

import pytest

from transduce.data.labelled import read_sentences, read_tagged
from transduce.errors import UserError

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def write(tmp_path, text, name="data.txt", raw=None):
    path = tmp_path / name
    path.write_bytes(raw if raw is not None else text.encode("utf-8"))
    return path


def test_label_tab_text_and_trecs_format(tmp_path):
    tsv = read_sentences(write(tmp_path, "pos\tgood film\n\nneg\t a bad one \n"))
    assert tsv.texts == ["good film", "a bad one"] and tsv.labels == ["pos", "neg"]
    assert tsv.lines == [1, 3]
    trec = read_sentences(
        write(tmp_path, "DESC:manner How did serfdom develop ?\nNUM:date When ?\n"), "trec"
    )
    assert trec.labels == ["DESC", "NUM"] and trec.texts[1] == "When ?"


@pytest.mark.parametrize(
    "text, format, message",
    [
        ("pos\tfine\njust text\n", "tsv", r"data.txt:2: expected label<TAB>text, got 'just text'"),
        ("pos\t  \n", "tsv", r"data.txt:1: expected label<TAB>text"),
        ("DESC How did it ?\n", "trec", r"data.txt:1: expected COARSE:fine question"),
        ("\n\n", "tsv", r"data.txt: no labelled sentence in it"),
        ("a\tb\n", "csv", r"format must be one of tsv, trec, not 'csv'"),
    ],
)
def test_bad_sentence_files_are_one_line_errors(tmp_path, text, format, message):
    with pytest.raises(UserError, match=message):
        read_sentences(write(tmp_path, text), format)


def test_invalid_utf8_names_its_line_or_is_replaced_with_a_warning(tmp_path, caplog):
    path = write(tmp_path, "", raw=b"pos\tfine\nneg\tbad \xf0 byte\n")
    with pytest.raises(UserError, match=r"data.txt:2: byte 0xf0 at column 9 is not UTF-8"):
        read_sentences(path)
    found = read_sentences(path, replace_invalid=True)
    assert found.texts[1] == "bad \ufffd byte"
    assert "replaced by U+FFFD on line 2" in caplog.text


def test_conll_sentences_end_at_a_blank_line_or_a_lone_tab(tmp_path):
    text = "Empire\tB-location\nState\tI-location\n\t\nI\tO\n'm\tO\n\nhere\tO\n"
    found = read_tagged(write(tmp_path, text))
    assert found.words == [["Empire", "State"], ["I", "'m"], ["here"]]
    assert found.tags[0] == ["B-location", "I-location"] and found.lines == [1, 4, 7]


def test_conllu_reads_words_and_upos_and_skips_ranges_empty_nodes_and_comments(tmp_path):
    text = (
        "# sent_id = 1\n# text = I don't know\n"
        "1\tI\tI\tPRON\tPRP\t_\t3\tnsubj\t_\t_\n"
        "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "2\tdo\tdo\tAUX\tVBP\t_\t3\taux\t_\t_\n"
        "3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_\n"
        "3.1\tgone\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "4\tknow\tknow\tVERB\tVB\t_\t0\troot\t_\t_\n\n"
    )
    found = read_tagged(write(tmp_path, text), "conllu")
    assert found.words == [["I", "do", "n't", "know"]]
    assert found.tags == [["PRON", "AUX", "PART", "VERB"]] and found.lines == [3]
    assert read_tagged(write(tmp_path, text), "conllu", column=5).tags[0][0] == "PRP"


@pytest.mark.parametrize(
    "text, format, message",
    [
        ("a\tO\nb O\n", "conll", r"data.txt:2: expected token<TAB>tag, got 1 field: 'b O'"),
        ("a\tO\tX\n", "conll", r"data.txt:1: expected token<TAB>tag, got 3 fields"),
        ("1\tI\tI\tPRON\n", "conllu", r"data.txt:1: a CoNLL-U line has 10 tab-separated"),
        ("2\tI" + "\t_" * 8 + "\n", "conllu", r"data.txt:1: word number '2' where 1 was due"),
        ("\n", "conll", r"data.txt: no tagged sentence in it"),
    ],
)
def test_bad_tagged_files_are_one_line_errors(tmp_path, text, format, message):
    with pytest.raises(UserError, match=message):
        read_tagged(write(tmp_path, text), format)


@pytest.mark.skipif(not DATA.is_dir(), reason="needs ../shared/data (trec, ud_ewt, wnut17)")
def test_the_shared_files_read_with_their_published_counts():
    trec = read_sentences(DATA / "trec" / "TREC.train", "trec", replace_invalid=True)
    assert len(trec.texts) == 5452 and set(trec.labels) == {
        "ABBR",
        "DESC",
        "ENTY",
        "HUM",
        "LOC",
        "NUM",
    }
    with pytest.raises(UserError, match=r"TREC.train:66: byte 0xf0"):
        read_sentences(DATA / "trec" / "TREC.train", "trec")
    assert len(read_sentences(DATA / "trec" / "TREC.test", "trec").texts) == 500
    ud = read_tagged(DATA / "ud_ewt" / "en_ewt-ud-train.conllu", "conllu")
    assert len(ud.words) == 12544 and len({t for s in ud.tags for t in s}) == 17
    wnut = read_tagged(DATA / "wnut17" / "wnut17train.conll")
    assert len(wnut.words) == 3394

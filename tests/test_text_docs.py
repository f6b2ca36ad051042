"""The text guide's commands work as written, on small synthetic files and a tiny model."""

import transduce
from tests.helpers.docs import console_block, run_console
from tests.helpers.text import write_text_files

TEXT = console_block("transduce text test runs/trec")
MLM = console_block("task=mlm")
TAGGER_START = console_block("init=runs/xpos")
SHIPPED = console_block("configs/text_upos.yaml")


def test_text_commands_run_in_order(tmp_path, monkeypatch, capsys):
    """The text guide's commands on small synthetic files and a tiny model: train, test and
    predict a classifier, then train a tagger and an entity tagger."""
    from tests.helpers.text import TEXT_SETTINGS

    assert [c.split()[1:3] for c in TEXT] == [["text", "train"], ["text", "test"]] + [
        ["text", "predict"]
    ] + [["text", "train"]] * 2
    monkeypatch.chdir(tmp_path)
    write_text_files(tmp_path)
    outputs = [
        run_console(command, capsys, extra=TEXT_SETTINGS if " train " in command else ())
        for command in TEXT
    ]
    assert outputs[0].startswith("best validation accuracy ")
    assert outputs[1].startswith("test accuracy ") and "(40 sentences)" in outputs[1]
    assert outputs[2].rstrip().endswith("How far is the moon from the earth ?")
    assert outputs[4].startswith("best validation f1 ")


def test_text_pretraining_commands_run_in_order(tmp_path, monkeypatch, capsys):
    """The text guide's BERT recipe: a masked language model on plain text, then a
    classifier fine-tuned from it."""
    from tests.helpers.text import TEXT_SETTINGS

    assert [c.split()[1:3] for c in MLM] == [["text", "train"]] * 2
    monkeypatch.chdir(tmp_path)
    write_text_files(tmp_path)
    lines = (tmp_path / "TREC.train").read_text().splitlines()
    (tmp_path / "sentences.txt").write_text("\n".join(x.split(" ", 1)[1] for x in lines))
    outputs = [run_console(command, capsys, extra=TEXT_SETTINGS) for command in MLM]
    assert outputs[0].startswith("best validation accuracy ")
    assert outputs[1].startswith("best validation accuracy ")
    assert (tmp_path / "runs" / "trec_mlm" / "spm.model").read_bytes() == (
        tmp_path / "runs" / "mlm" / "spm.model"
    ).read_bytes()


def test_the_shipped_config_command_runs(tmp_path, monkeypatch, capsys):
    """The guide's runs of shipped configs (the UPOS recipe's start, then the tagger
    fine-tuned from it, at a tiny size), their files given on the line."""
    import shutil

    from tests.helpers.docs import ROOT
    from tests.helpers.text import TEXT_SETTINGS

    trains = [c for c in SHIPPED if c.startswith("transduce text train")]
    assert [c.split()[3] for c in trains] == [
        "configs/text_upos_xpos.yaml",
        "configs/text_upos.yaml",
    ]
    assert SHIPPED[2:] == ["transduce average runs/upos --last 4", "transduce text test runs/upos"]
    monkeypatch.chdir(tmp_path)
    write_text_files(tmp_path)
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    for command in trains:
        output = run_console(command, capsys, extra=TEXT_SETTINGS)
        assert output.startswith("best validation accuracy ")
    run_console(SHIPPED[2], capsys)
    assert run_console(SHIPPED[3], capsys).startswith("test accuracy ")
    assert (tmp_path / "runs" / "upos" / "averaged.pt").is_file()
    saved = (tmp_path / "runs" / "upos" / "config.yaml").read_text()
    assert "relative: 16" in saved and "piece: last" in saved  # the recipe's own settings
    assert (
        "init: " in saved and "column: 5" in (tmp_path / "runs/upos_xpos/config.yaml").read_text()
    )


def test_text_fine_tuning_from_a_tagger_runs(tmp_path, monkeypatch, capsys):
    """The guide's other start: a tagger of a treebank's XPOS column, then a classifier
    fine-tuned from its encoder."""
    from tests.helpers.text import TEXT_SETTINGS

    assert [c.split()[1:3] for c in TAGGER_START] == [["text", "train"]] * 2
    monkeypatch.chdir(tmp_path)
    write_text_files(tmp_path)
    outputs = [run_console(c, capsys, extra=TEXT_SETTINGS) for c in TAGGER_START]
    assert all(out.startswith("best validation accuracy ") for out in outputs)
    assert transduce.load(tmp_path / "runs" / "xpos").labels == ["JJ", "NN"]  # column 5
    assert (tmp_path / "runs" / "trec_xpos" / "spm.model").read_bytes() == (
        tmp_path / "runs" / "xpos" / "spm.model"
    ).read_bytes()

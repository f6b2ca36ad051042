"""`transduce.load`: one call for a translation run, a demo run, an export or a forecaster."""

import numpy as np
import pytest
import torch

import transduce
from transduce.cli.main import main
from transduce.device import int8_supported
from transduce.errors import UserError


def test_translate_takes_a_string_or_a_list(trained_run):
    model = transduce.load(trained_run, verbose=False)
    one = model.translate("five hundred", beam=2)
    many = model.translate(["five hundred", "", "six"], beam=2)
    assert isinstance(one, str) and one == many[0]
    assert len(many) == 3 and many[1] == ""
    nbest = model.translate(["six"], beam=3, nbest=2)
    assert len(nbest[0]) == 2 and all(isinstance(s, float) for _, s in nbest[0])
    assert nbest[0][0][1] >= nbest[0][1][1]  # best first
    size = sum(p.numel() for p in model.model.parameters())
    # the device it loaded on: the CPU here, CUDA where a GPU is visible (device="auto")
    assert repr(model) == (
        f"Translator({size:,} parameters, {model.device}, "
        f"{model.precision}; beam 5, α 0.6 (the paper's beam 5 and α 0.6))"
    )


@pytest.mark.skipif(not int8_supported(), reason="this PyTorch has no oneDNN int8 kernel")
def test_an_int8_translator_translates_and_its_views_still_open(trained_run):
    from transduce.nn.int8 import Int8Linear

    float32 = transduce.load(trained_run, "cpu", "fp32", verbose=False)
    int8 = transduce.load(trained_run, "cpu", "int8", verbose=False)
    assert int8.precision == "int8" and "int8" in repr(int8)
    kinds = {type(m).__name__ for m in int8.model.modules()}
    assert "Int8Linear" in kinds and "Linear" not in kinds
    assert not any(isinstance(m, Int8Linear) for m in float32.model.modules())
    lines = ["five hundred", "six", "", "seventy two"]
    together = int8.translate(lines, beam=3, nbest=2)
    assert len(together) == 4 and together[2][0][0] == ""
    for i in (0, 1, 3):  # the same translations and scores alone as in a batch
        assert int8.translate([lines[i]], beam=3, nbest=2)[0] == together[i]
    maps = int8.attention("five hundred")
    assert maps.cross[0].shape[-1] == len(maps.source)
    assert int8.explain("five hundred", beam=2).steps


@pytest.mark.parametrize(
    "lines, settings, error, message",
    [
        (None, {}, TypeError, "a string or a list of strings, not NoneType"),
        (["six", 7], {}, TypeError, "item 1 is int"),
        ("six", {"beam": 0}, ValueError, "beam must be a whole number of at least 1, not 0"),
        ("six", {"beam": 2.5}, ValueError, "beam must be a whole number"),
        ("six", {"beam": True}, ValueError, "beam must be a whole number"),
        ("six", {"nbest": 6}, ValueError, "nbest 6 exceeds the beam size 5"),
        ("six", {"lenpen": float("nan")}, ValueError, "lenpen must be a number of at least 0"),
        ("six", {"lenpen": -1}, ValueError, "lenpen must be a number of at least 0"),
        ("six", {"no_repeat_ngram": -1}, ValueError, "no_repeat_ngram must be a whole number"),
    ],
)
def test_translate_names_a_wrong_argument(trained_run, lines, settings, error, message):
    model = transduce.load(trained_run, verbose=False)
    with pytest.raises(error, match=message):
        model.translate(lines, **settings)


def test_numpy_numbers_are_numbers_and_attention_names_a_wrong_argument(trained_run):
    model = transduce.load(trained_run, verbose=False)
    assert model.translate("six", beam=np.int64(2), lenpen=np.float32(0.6)) == model.translate(
        "six", beam=2, lenpen=0.6
    )
    with pytest.raises(TypeError, match="one sentence, a string, not list"):
        model.attention(["six"])
    with pytest.raises(ValueError, match="beam must be a whole number of at least 1, not 0"):
        model.attention("six", beam=0)


def test_attention_returns_every_layer_and_head_with_their_tokens(trained_run):
    model = transduce.load(trained_run, verbose=False)
    maps = model.attention("seven thousand two", beam=2)
    assert maps.translation == model.translate("seven thousand two", beam=2)
    S, T = len(maps.source), len(maps.target)
    assert maps.source[-1] == "</s>" and maps.target[-1] == "</s>"
    assert maps.target_inputs[0] == "<s>" and maps.target_inputs[1:] == maps.target[:-1]
    layers, heads = 1, 2  # the tiny config
    for kind, shape in (
        ("encoder", (heads, S, S)),
        ("decoder", (heads, T, T)),
        ("cross", (heads, T, S)),
    ):
        weights = maps.weights(kind)
        assert len(weights) == layers and weights[0].shape == shape, kind
        np.testing.assert_allclose(weights[0].sum(-1), 1.0, atol=1e-4)
    causal = maps.decoder[0]
    assert np.all(np.triu(causal, k=1) == 0)  # no position attends to a later one
    assert "cross" in maps.to_dict() and len(maps.to_dict()["encoder"][0]) == heads


def test_a_demo_run_loads_translates_and_shows_attention(demo_run):
    model = transduce.load(demo_run, verbose=False)
    assert isinstance(model.translate("321"), str)
    maps = model.attention("three hundred twenty-one", beam=1)
    assert maps.source == ["three", "hundred", "twenty", "-", "one", "</s>"]
    assert model.attention("321", beam=1).source == maps.source  # digits read as words


def test_a_forecast_run_loads_as_a_forecaster(forecast_run):
    run, csv = forecast_run
    model = transduce.load(run)
    rows = model.forecast(csv.read_text(encoding="utf-8"))
    assert len(rows) == 12 and set(rows[0]) == {"date", "load", "temp"}
    assert rows[0]["date"] == "2021-01-26 00:00:00"  # the hour after the file's last row
    with pytest.raises(
        UserError,
        match="<rows>: 1 row of values; the model reads the last 48, so "
        "it needs at least that many",
    ):
        model.forecast("date,load,temp\n2021-01-01 00:00:00,1,2\n")
    # a path or bytes where the rows' text belongs, and nothing where a path belongs
    with pytest.raises(UserError, match="'sine.csv' is a file name, not CSV rows; forecast"):
        model.forecast("sine.csv")
    with pytest.raises(TypeError, match="CSV text \\(a str\\), not bytes; predict\\(\\)"):
        model.forecast(csv.read_bytes())
    with pytest.raises(TypeError, match="give a CSV file's path or a DataFrame"):
        model.predict("")
    assert model.predict(csv) == rows
    assert model.predict(None) == rows  # None: the CSV the run was trained on


def test_a_forecaster_refuses_a_device_or_precision_it_would_ignore(forecast_run, monkeypatch):
    run, _ = forecast_run
    assert transduce.load(run, device="cpu", precision="fp32") is not None
    with pytest.raises(UserError, match="runs on the CPU in float32.*leave out precision=bf16$"):
        transduce.load(run, precision="bf16")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a GPU, as far as
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)  # pick_device can tell
    with pytest.raises(UserError, match="leave out device=cuda$"):
        transduce.load(run, device="cuda")


def test_an_export_loads_as_a_ctranslate2_translator(trained_run, tmp_path):
    out = tmp_path / "ct2"
    assert main(["export", str(trained_run), str(out)]) == 0
    model = transduce.load(out)
    assert isinstance(model.translate("five"), str)
    assert repr(model).startswith("CTranslate2Translator(cpu") and "beam 5, α 0.6" in repr(model)
    with pytest.raises(UserError, match="does not return attention weights"):
        model.attention("five")


@pytest.mark.parametrize("beam", [1, 3])
def test_a_sentence_translates_the_same_whatever_its_batch(trained_run, beam):
    """The output limit is each sentence's own (its length + 50), not its batch's: an
    untrained model that never ends a sentence shows the difference."""
    from transduce.data.numbers import english

    model = transduce.load(trained_run, verbose=False)
    sentences = [english(n) for n in (5, 1234, 987654, 42, 700001)]
    alone = [model.translate(s, beam=beam) for s in sentences]
    assert model.translate(sentences, beam=beam) == alone


def test_a_line_in_capitals_is_read_in_sentence_case(trained_run):
    from transduce.decoding.sources import sentence_case

    assert sentence_case("A MAN RIDES A BIKE.") == "A man rides a bike."
    assert sentence_case("A man rides a BMX.") == "A man rides a BMX."
    assert sentence_case("I") == "I" and sentence_case("") == ""
    model = transduce.load(trained_run, verbose=False)
    assert model.translate("FIVE HUNDRED", beam=2) == model.translate("Five hundred", beam=2)


@pytest.mark.parametrize(
    "path, settings, message",
    [
        (None, {}, "takes the path of a run directory, a checkpoint or an export .*, not None"),
        ("", {}, "not ''"),
        (["RUN", 5], {}, "not 5"),
        ("RUN", {"device": 0}, "device must be a string such as 'auto', not 0"),
    ],
)
def test_load_names_a_wrong_argument(trained_run, path, settings, message):
    path = (
        [trained_run if p == "RUN" else p for p in path]
        if isinstance(path, list)
        else (trained_run if path == "RUN" else path)
    )
    with pytest.raises(TypeError, match=message):
        transduce.load(path, **settings)


def test_a_list_of_forecasting_runs_is_refused_in_one_line(forecast_run):
    run, _ = forecast_run
    with pytest.raises(UserError, match="forecasting runs load one at a time; to forecast with"):
        transduce.load([run, run])


def test_translate_passes_early_exit_to_the_search_and_ctranslate2_refuses_it(trained_run):
    from transduce.export.ctranslate2 import CTranslate2Translator

    model = transduce.load(trained_run, verbose=False)
    asked = []
    search = model.search
    model.search = lambda *a, **kw: asked.append(kw.get("early_exit", False)) or search(*a, **kw)
    model.translate("five hundred", beam=3, early_exit=True)
    model.translate("five hundred", beam=3)
    assert asked == [True, False]
    with pytest.raises(UserError, match="early_exit is for our engine"):
        CTranslate2Translator.search(
            object.__new__(CTranslate2Translator), ["six"], early_exit=True
        )

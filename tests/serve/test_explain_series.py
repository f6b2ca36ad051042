"""The explainer's attention views of a forecaster (over a CSV's rows, or one series of a
global run) and of a classifier or tagger (over a sentence's subwords), in headless
Chromium, checked against the Python API's weights."""

import numpy as np
import pytest

import transduce
from tests.helpers.serving import css, serve, shot, wait


def test_a_forecasting_run_shows_its_attention_with_dates(tmp_path, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from tests.helpers.forecasting import write_sine
    from transduce.api.forecaster import Forecaster

    csv = write_sine(tmp_path / "sine.csv", n=400)
    model = Forecaster.fit(
        csv,
        tmp_path / "run",
        model="transformer",
        input_length=48,
        horizon=12,
        d_model=16,
        d_ff=32,
        num_heads=2,
        max_epochs=1,
        threads=1,
    )
    api = model.attention(csv)
    with serve(tmp_path / "run", "--threads", "1") as url:
        browser.get(url + "explain")
        wait(
            browser,
            lambda b: (
                b.find_element(By.ID, "series").is_displayed()
                and b.find_element(By.ID, "rows").get_attribute("value")
            ),
        )
        rows = browser.find_element(By.ID, "rows")
        # pasted, as a user would: send_keys types the 400 rows' ~14,000 characters one
        # event at a time, which ran past WebDriver's 120 s read timeout on a slow 2-core VM
        browser.execute_script(
            "arguments[0].value = arguments[1];", rows, open(csv, encoding="utf-8").read()
        )
        browser.find_element(By.ID, "attend").click()
        wait(browser, lambda b: css(b, "#series-map rect.series-cell"))
        cells = css(browser, "#series-map rect.series-cell")
        assert len(cells) == len(api["rows"]) * len(api["columns"])
        mean = np.array(api["weights"]).mean(0)
        for cell in cells[::37]:
            i, j = int(cell.get_attribute("data-row")), int(cell.get_attribute("data-col"))
            assert float(cell.get_attribute("data-weight")) == pytest.approx(mean[i, j], abs=1e-4)
        labels = [t.text for t in css(browser, "#series-map text")]
        assert api["columns"][0] in labels and api["forecast_dates"][0] in labels
        assert not browser.find_element(By.ID, "ask").is_displayed()  # no sentence box
        strongest = max(float(c.get_attribute("data-weight")) for c in cells)
        assert f"{strongest:.3f}" in labels  # the colour scale ends at the largest weight
        # the caption sits above every rotated column label
        boxes = browser.execute_script(
            "return Array.from(document.querySelectorAll('#series-map text')).map(function (t)"
            " { var b = t.getBoundingClientRect(); return [t.textContent, b.top, b.bottom]; });"
        )
        [caption_bottom] = [bottom for text, _, bottom in boxes if "model, last layer" in text]
        columns = [top for text, top, _ in boxes if text in api["columns"]]
        assert columns and min(columns) >= caption_bottom, (caption_bottom, min(columns))
        Select(browser.find_element(By.ID, "series-head")).select_by_index(2)
        first = css(browser, "#series-map rect.series-cell")[0]
        assert float(first.get_attribute("data-weight")) == pytest.approx(
            api["weights"][1][0][0], abs=1e-4
        )
        shot(browser, "forecast_attention", "#series")


def test_a_global_run_shows_the_attention_of_a_series_named(tmp_path, browser):
    from selenium.webdriver.common.by import By

    from tests.helpers.forecasting import table
    from transduce.api import Forecaster

    csv = table(tmp_path / "train.csv")
    model = Forecaster.fit(
        csv,
        tmp_path / "run",
        layout="long",
        model="patch",
        patch_len=12,
        stride=12,
        input_length=48,
        horizon=12,
        d_model=16,
        d_ff=32,
        num_heads=2,
        max_epochs=1,
        threads=1,
    )
    api = model.attention(series="S2")
    with serve(tmp_path / "run", "--threads", "1") as url:
        browser.get(url + "explain")
        wait(browser, lambda b: b.find_element(By.ID, "explain-series").get_attribute("value"))
        assert not browser.find_element(By.ID, "rows").is_displayed()  # no rows to paste
        assert browser.find_element(By.ID, "explain-series").get_attribute("value") == "S0"
        box = browser.find_element(By.ID, "explain-series")
        box.clear()
        box.send_keys("S2")
        browser.find_element(By.ID, "attend").click()
        wait(browser, lambda b: css(b, "#series-map rect.series-cell"))
        cells = css(browser, "#series-map rect.series-cell")
        assert len(cells) == len(api["rows"]) * len(api["columns"])
        mean = np.array(api["weights"][0]).mean(0)  # channel y: the mean of its heads
        for cell in cells[::5]:
            i, j = int(cell.get_attribute("data-row")), int(cell.get_attribute("data-col"))
            assert float(cell.get_attribute("data-weight")) == pytest.approx(mean[i, j], abs=1e-4)
        box.clear()
        box.send_keys("nope")
        browser.find_element(By.ID, "attend").click()
        wait(browser, lambda b: "no series 'nope'" in b.find_element(By.ID, "series-error").text)
        shot(browser, "global_attention", "#series")


def test_a_text_run_shows_what_the_pooled_position_and_each_word_attend_to(tmp_path, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from tests.helpers.text import TEXT_SETTINGS, labelled_sentences, tagged_sentences
    from transduce.cli.main import main

    train = labelled_sentences(tmp_path / "train.tsv", 200, 1)
    tiny = [*TEXT_SETTINGS, "num_encoder_layers=2"]
    assert main(["text", "train", f"train={train}", *tiny, "--run-dir", str(tmp_path / "c")]) == 0
    tagged = tagged_sentences(tmp_path / "train.conll", 200, 1)
    argv = ["text", "train", "task=tag", "format=conll", f"train={tagged}", *tiny]
    assert main([*argv, "--run-dir", str(tmp_path / "t")]) == 0
    sentence = "big fox red owl"
    for run in ("c", "t"):
        model = transduce.load(tmp_path / run)
        api = model.attention(sentence, layer=0)
        assert api["columns"][0] == "[CLS]" and api["layers"] == 2
        rows = 1 if run == "c" else 4  # the pooled position, or each word
        assert len(api["rows"]) == rows and len(api["weights"]) == 2  # heads
        with serve(tmp_path / run, "--threads", "1") as url:
            browser.get(url + "explain")
            wait(browser, lambda b: b.find_element(By.ID, "explain-text").get_attribute("value"))
            assert not browser.find_element(By.ID, "rows").is_displayed()
            box = browser.find_element(By.ID, "explain-text")
            box.clear()
            box.send_keys(sentence)
            Select(browser.find_element(By.ID, "text-layer")).select_by_index(0)
            wait(browser, lambda b: css(b, "#series-map rect.series-cell"))
            cells = css(browser, "#series-map rect.series-cell")
            assert len(cells) == rows * len(api["columns"])
            mean = np.array(api["weights"]).mean(0)
            for cell in cells:
                i, j = int(cell.get_attribute("data-row")), int(cell.get_attribute("data-col"))
                assert float(cell.get_attribute("data-weight")) == pytest.approx(
                    mean[i, j], abs=1e-4
                )
            labels = [t.text for t in css(browser, "#series-map text")]
            assert api["rows"][0] in labels and "layer 1 of 2" in " ".join(labels)
            shot(browser, f"text_attention_{run}", "#series")

"""The explainer in a real browser: headless Chromium (Selenium) on `transduce explain`'s
page, on 127.0.0.1. Each test drives the page as a user would and checks what it shows
against the Python API (`transduce.load(RUN).explain(...)` and `.head(...)`).

TRANSDUCE_EXPLAIN_SHOTS=DIR keeps a screenshot of each view there (docs/images/explain/
holds those of the demo and of a Multi30k model)."""

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

import transduce
from tests.helpers.serving import serve

SENTENCE = os.environ.get(
    "TRANSDUCE_EXPLAIN_SENTENCE", "seven hundred forty-two thousand one hundred nine"
)


def wait(browser, condition, seconds=60):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, seconds).until(lambda b: condition(b))


def css(browser, selector):
    from selenium.webdriver.common.by import By

    return browser.find_elements(By.CSS_SELECTOR, selector)


def shot(browser, name, selector):
    folder = os.environ.get("TRANSDUCE_EXPLAIN_SHOTS")
    if folder:
        element = css(browser, selector)[0]
        browser.execute_script("arguments[0].scrollIntoView()", element)
        Path(folder).mkdir(parents=True, exist_ok=True)
        element.screenshot(str(Path(folder) / f"{name}.png"))


def explained(browser, url, sentence, beam=5):
    """Open the page, type the sentence, press Explain, wait for the views."""
    from selenium.webdriver.common.by import By

    browser.get(url + "explain")
    wait(browser, lambda b: b.find_element(By.ID, "sentence").is_displayed())
    box = browser.find_element(By.ID, "sentence")
    box.clear()
    box.send_keys(sentence)
    beam_box = browser.find_element(By.ID, "beam")
    beam_box.clear()
    beam_box.send_keys(str(beam))
    browser.find_element(By.ID, "go").click()
    wait(browser, lambda b: css(b, "#head-numbers svg") and css(b, "#model-view svg .thumb"))


def step_label(browser):
    from selenium.webdriver.common.by import By

    return browser.find_element(By.ID, "step-label").text


@pytest.fixture(scope="module")
def run_and_model(trained_run):
    run = os.environ.get("TRANSDUCE_SERVE_RUN", str(trained_run))
    return run, transduce.load(run, device="cpu", precision="fp32", verbose=False)


@pytest.fixture
def page(run_and_model, browser):
    run, model = run_and_model
    with serve(run, "--threads", "1") as url:
        yield url, browser, model


def test_stepping_shows_the_beam_and_the_attention_of_each_token(page):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    url, browser, model = page
    explained(browser, url, SENTENCE, beam=4)
    api = model.explain(SENTENCE, beam=4)
    shown = [s.text for s in css(browser, "#output .tok")]
    assert shown == api.maps.target
    assert step_label(browser) == f"step 1 of {len(api.steps)}"
    # forward with the button, then the arrow key; back with the other key
    browser.find_element(By.ID, "forward").click()
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_RIGHT)
    assert step_label(browser) == f"step 3 of {len(api.steps)}"
    rows = css(browser, "#beam-table table.beam:not(.candidates) tr")[1:]
    assert len(rows) == len(api.steps[2]["hypotheses"]) == 4
    finished = [c for c in api.steps[2]["candidates"] if c["status"] == "finished"]
    assert len(css(browser, "#beam-table tr.st-finished")) == len(finished)
    assert len(css(browser, "#tree .tree-node")) == sum(
        1 for s in api.steps[:3] for c in s["candidates"] if c["status"] != "dropped"
    )
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_LEFT)
    assert step_label(browser) == f"step 2 of {len(api.steps)}"
    now = css(browser, "#output .tok.now")[0].text
    assert now == api.maps.target[1]
    # the head view's lines are row 1 of every head's cross-attention in the last layer
    last = len(api.maps.cross) - 1
    lines = css(browser, "#head-view line.attn-line")
    assert lines
    for line in lines:
        h, k = int(line.get_attribute("data-head")), int(line.get_attribute("data-key"))
        assert float(line.get_attribute("data-weight")) == pytest.approx(
            float(api.maps.cross[last][h][1][k]), abs=1e-4
        )
    drawn = {(int(x.get_attribute("data-head")), int(x.get_attribute("data-key"))) for x in lines}
    expected = {
        (h, k)
        for h in range(api.maps.cross[last].shape[0])
        for k, w in enumerate(api.maps.cross[last][h][1])
        if w >= 0.005
    }
    assert drawn == expected
    shot(browser, "decoding", "#decoding")
    shot(browser, "head_view", "#attention")


def test_a_head_picked_in_the_model_view_opens_with_the_models_numbers(page):
    url, browser, model = page
    explained(browser, url, SENTENCE)
    layers, heads = (
        len(model.attention(SENTENCE).cross),
        model.model.decoder.layers[0].cross_attn.num_heads,
    )
    thumbs = css(browser, "#model-view .thumb")
    assert len(thumbs) == layers * heads
    browser.execute_script("window.lastHead = null")
    pick = [
        t
        for t in thumbs
        if t.get_attribute("data-layer") == "0" and t.get_attribute("data-head") == str(heads - 1)
    ][0]
    browser.execute_script(  # an SVG group takes a dispatched click
        "arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", pick
    )
    wait(browser, lambda b: b.execute_script("return window.lastHead"))
    numbers = browser.execute_script("return window.lastHead")
    assert (numbers["kind"], numbers["layer"], numbers["head"]) == ("cross", 0, heads - 1)
    api = model.head(SENTENCE, "cross", 0, heads - 1, numbers["query"])
    scores = [float(x.get_attribute("data-score")) for x in css(browser, "#head-numbers .score")]
    weights = [float(x.get_attribute("data-weight")) for x in css(browser, "#head-numbers .weight")]
    np.testing.assert_allclose(scores, api.scores, atol=1e-4)
    np.testing.assert_allclose(weights, api.weights, atol=1e-4)
    np.testing.assert_allclose(
        weights, model.attention(SENTENCE).cross[0][heads - 1][numbers["query"]], atol=1e-4
    )
    shot(browser, "head", "#head")
    shot(browser, "model_view", "#model-view")


def test_the_decoder_head_shows_the_mask_and_positions_are_drawn(page):
    from selenium.webdriver.support.ui import Select

    url, browser, model = page
    explained(browser, url, SENTENCE)
    Select(css(browser, "#kind")[0]).select_by_value("decoder")
    wait(
        browser,
        lambda b: b.execute_script("return window.lastHead && window.lastHead.kind === 'decoder'"),
    )
    numbers = browser.execute_script("return window.lastHead")
    masked = css(browser, "#head-numbers .score.masked")
    assert len(masked) == len(numbers["key_tokens"]) - numbers["query"] - 1
    assert all(s is None for s in numbers["scores"][numbers["query"] + 1 :])
    table = model.explain(SENTENCE).positions["table"]
    assert len(css(browser, "#pe-table rect")) == 1 + table.size  # the background, then cells
    assert len(css(browser, "#pe-curves polyline")) == 4
    shot(browser, "positions", "#positions")


@pytest.mark.parametrize("view", ["head-view", "model-view", "head-numbers", "pe-table", "tree"])
def test_every_view_exports_as_svg_and_png(page, view):
    url, browser, _ = page
    explained(browser, url, SENTENCE)
    for kind, start in (("svg", "data:image/svg+xml"), ("png", "data:image/png")):
        done = browser.execute_async_script(
            "var cb = arguments[arguments.length - 1];"
            "window.explainExport(arguments[0], arguments[1]).then(cb, e => cb(String(e)))",
            view,
            kind,
        )
        assert isinstance(done, dict), done
        assert done["href"].startswith(start) and done["bytes"] > 500
        assert done["view"] == f"{view}.{kind}"
    link = css(browser, "#last-export")[0]
    assert link.get_attribute("download") == f"{view}.png"


def test_a_six_layer_eight_head_model_and_a_sixty_token_sentence(
    tmp_path,
    browser,
    record_property,
):
    """The page holds a 6+6-layer, 8-head model (a demo run of two updates: the size, not
    the skill, is the point) and a 60-token sentence; how long one step takes to draw is
    recorded (a benchmark figure, printed, never asserted)."""
    from transduce.cli.main import main

    run = tmp_path / "big"
    assert (
        main(
            [
                "demo",
                "max_steps=2",
                "num_encoder_layers=6",
                "num_decoder_layers=6",
                "num_heads=8",
                "d_model=64",
                "d_ff=128",
                "max_len=160",
                "held_out=5",
                "valid_every=2",
                "threads=1",
                "--output",
                str(run),
            ]
        )
        == 0
    )
    model = transduce.load(run, device="cpu", precision="fp32", verbose=False)
    words = ("seven hundred forty-two thousand one hundred ninety-nine " * 7).split()
    sentence = " ".join(words)
    source = model.attention(sentence, beam=2).source
    assert len(source) >= 60
    with serve(run, "--threads", "1") as url:
        explained(browser, url, sentence, beam=2)
        thumbs = css(browser, "#model-view .thumb")
        assert len(thumbs) == 6 * 8
        first = browser.execute_script("return window.lastStepMs")  # thumbnails drawn here
        browser.execute_script("window.explainGoTo(1)")
        times = []
        for _ in range(10):
            browser.execute_script("window.explainGoTo(window.stepsDrawn % 5 + 1)")
            times.append(browser.execute_script("return window.lastStepMs"))
        median = float(np.median(times))
        record_property("explain_step_ms", median)
        record_property("explain_first_step_ms", first)
        print(
            f"explain: one step of a 6-layer, 8-head model over {len(source)} source tokens "
            f"drew in {median:.0f} ms (median of 10); the first, with the 48 thumbnails, "
            f"in {first:.0f} ms"
        )
        out = os.environ.get("TRANSDUCE_EXPLAIN_TIMING")
        if out:
            Path(out).write_text(
                json.dumps(
                    {
                        "source_tokens": len(source),
                        "layers": 6,
                        "heads": 8,
                        "median_step_ms": median,
                        "first_step_ms": first,
                        "steps_ms": times,
                        "when": time.time(),
                    }
                )
            )


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
        rows.clear()
        rows.send_keys(open(csv, encoding="utf-8").read())
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

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
from tests.helpers.serving import css, serve, shot, wait

SENTENCE = os.environ.get(
    "TRANSDUCE_EXPLAIN_SENTENCE", "seven hundred forty-two thousand one hundred nine"
)


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

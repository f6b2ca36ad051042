"""A real browser on a real server: headless Chromium (Debian's chromium and
chromium-driver, through Selenium) loads the page of `transduce serve` on 127.0.0.1, types
a sentence, waits for the translation, and checks the attention heatmap's cells and labels
and that choosing another head redraws them.

Set TRANSDUCE_SERVE_RUN to serve another run (the README's screenshot uses a demo run) and
TRANSDUCE_SCREENSHOT to keep the screenshot."""

import os
from pathlib import Path

import pytest

from tests.helpers.serving import serve


@pytest.fixture
def server(trained_run):
    run = os.environ.get("TRANSDUCE_SERVE_RUN", str(trained_run))
    with serve(run) as url:
        yield url


def cells(browser):
    from selenium.webdriver.common.by import By

    return [
        c.get_attribute("data-weight")
        for c in browser.find_elements(By.CSS_SELECTOR, "#attention td.ta-cell")
    ]


def test_the_page_translates_and_draws_attention(server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import Select, WebDriverWait

    wait = WebDriverWait(browser, 60)
    browser.get(server)
    wait.until(ready.visibility_of_element_located((By.ID, "sentences")))
    box = browser.find_element(By.ID, "sentences")
    box.clear()
    box.send_keys("three hundred twenty-one")
    browser.find_element(By.ID, "go").click()
    wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#results .hyp"))
    assert browser.find_element(By.CSS_SELECTOR, "#results .src").text == "three hundred twenty-one"
    wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#attention td.ta-cell"))

    # cross-attention: one row per output token, one column per source token (+ </s>)
    columns = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#attention th.ta-col")]
    rows = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#attention th.ta-row")]
    assert columns[-1] == "</s>" and rows[-1] == "</s>" and len(columns) >= 2
    mean = cells(browser)
    assert len(mean) == len(rows) * len(columns)
    assert all(0 <= float(w) <= 1 for w in mean)

    Select(browser.find_element(By.CSS_SELECTOR, "#attention select.ta-head")).select_by_value("0")
    wait.until(
        lambda b: b.find_element(By.ID, "attention").get_attribute("data-showing") == "cross/0/0"
    )
    assert cells(browser) != mean  # one head's weights are not the heads' mean

    Select(browser.find_element(By.CSS_SELECTOR, "#attention select.ta-kind")).select_by_value(
        "decoder"
    )
    wait.until(
        lambda b: (
            b.find_element(By.ID, "attention").get_attribute("data-showing").startswith("decoder/")
        )
    )
    n = len(browser.find_elements(By.CSS_SELECTOR, "#attention th.ta-row"))
    weights = [float(w) for w in cells(browser)]
    above = [weights[q * n + k] for q in range(n) for k in range(q + 1, n)]
    assert above and all(w == 0 for w in above)  # the causal triangle is drawn

    Select(browser.find_element(By.CSS_SELECTOR, "#attention select.ta-kind")).select_by_value(
        "cross"
    )
    layers = Select(browser.find_element(By.CSS_SELECTOR, "#attention select.ta-layer"))
    layers.select_by_index(len(layers.options) - 1)  # the last layer, heads' mean
    Select(browser.find_element(By.CSS_SELECTOR, "#attention select.ta-head")).select_by_value(
        "mean"
    )
    target = os.environ.get("TRANSDUCE_SCREENSHOT")
    if target:
        browser.save_screenshot(target)

    # input the model cannot read is said under its translation
    box.clear()
    box.send_keys("seven €\nseven")
    browser.find_element(By.ID, "go").click()
    wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#results .result")) == 2)
    results = browser.find_elements(By.CSS_SELECTOR, "#results .result")
    warned = results[0].find_elements(By.CSS_SELECTOR, ".warning")
    assert len(warned) == 1 and '"€" unknown to the model' in warned[0].text
    assert not results[1].find_elements(By.CSS_SELECTOR, ".warning")


def test_the_forecast_page_draws_history_forecast_and_its_band(tmp_path, browser):
    """A probabilistic forecaster: each column gets its history, its forecast and the
    band between its lowest and highest quantile."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.helpers.forecasting import write_sine
    from transduce.cli.main import main

    csv = write_sine(tmp_path / "sine.csv", n=400)
    run = tmp_path / "run"
    assert (
        main(
            [
                "forecast",
                "train",
                f"csv={csv}",
                "model=patch",
                "input_length=48",
                "horizon=12",
                "patch_len=8",
                "stride=4",
                "d_model=16",
                "d_ff=32",
                "quantiles=0.1,0.5,0.9",
                "max_epochs=1",
                "threads=1",
                "--run-dir",
                str(run),
            ]
        )
        == 0
    )
    with serve(run) as url:
        wait = WebDriverWait(browser, 60)
        browser.get(url)
        wait.until(ready.visibility_of_element_located((By.ID, "predict")))
        browser.find_element(By.ID, "predict").click()
        wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "svg.forecast")) == 2)
        charts = browser.find_elements(By.CSS_SELECTOR, "svg.forecast")
        for chart in charts:
            assert chart.find_elements(By.CSS_SELECTOR, "polygon.band")
            assert chart.find_element(By.CSS_SELECTOR, "text.legend").text.endswith(
                "(grey: history, orange: forecast, shaded: quantiles 0.1–0.9)"
            )
            for line in chart.find_elements(By.CSS_SELECTOR, "polyline"):
                assert "NaN" not in line.get_attribute("points")
        assert browser.find_element(By.ID, "forecast-error").text == ""
        assert browser.find_element(By.ID, "rows-hint").text.startswith(
            "Paste at least 48 recent rows as CSV"
        )  # the server's, for this model


def test_the_page_of_a_global_run_picks_a_series_by_id(tmp_path, browser):
    """A global run (layout=long): the page lists its series; picking one draws its
    history and forecast, with the band of its quantiles."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import Select, WebDriverWait

    from tests.helpers.forecasting import PANEL_SETTINGS as TINY
    from tests.helpers.forecasting import table
    from transduce.cli.main import main

    csv = table(tmp_path / "train.csv")
    run = tmp_path / "run"
    assert (
        main(
            [
                "forecast",
                "train",
                f"csv={csv}",
                "model=patch",
                "patch_len=12",
                "stride=6",
                *TINY,
                "--run-dir",
                str(run),
            ]
        )
        == 0
    )
    with serve(run) as url:
        wait = WebDriverWait(browser, 60)
        browser.get(url)
        wait.until(ready.visibility_of_element_located((By.ID, "series-id")))
        assert not browser.find_element(By.ID, "rows").is_displayed()
        pick = Select(browser.find_element(By.ID, "series-id"))
        assert [o.text for o in pick.options] == ["S0", "S1", "S2"]
        pick.select_by_visible_text("S2")
        wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "svg.forecast")) == 1)
        chart = browser.find_element(By.CSS_SELECTOR, "svg.forecast")
        assert chart.find_elements(By.CSS_SELECTOR, "polygon.band")
        labels = [t.text for t in chart.find_elements(By.CSS_SELECTOR, "text")]
        assert "284" in labels  # the last forecast step of S2 (260 + 24)
        assert browser.find_element(By.ID, "forecast-error").text == ""


@pytest.mark.parametrize("task", ["classify", "entities"])
def test_the_page_of_a_text_run_labels_sentences(tmp_path, browser, task):
    """A classifier's page shows each line's label and its probability; an entity tagger's
    shows each line's entities; both as the API gives them."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    import transduce
    from tests.helpers.text import TEXT_SETTINGS, labelled_sentences, tagged_sentences
    from transduce.cli.main import main

    if task == "classify":
        data = ["format=tsv", f"train={labelled_sentences(tmp_path / 'train.tsv', 200, 1)}"]
    else:
        data = ["format=conll", f"train={tagged_sentences(tmp_path / 'train.conll', 200, 1)}"]
    run = tmp_path / "run"
    assert (
        main(["text", "train", f"task={task}", *data, *TEXT_SETTINGS, "--run-dir", str(run)]) == 0
    )
    lines = ["red cat owl", "big fox blue"]
    model = transduce.load(run)
    with serve(run) as url:
        wait = WebDriverWait(browser, 60)
        browser.get(url)
        wait.until(ready.visibility_of_element_located((By.ID, "label")))
        assert not browser.find_element(By.ID, "translate").is_displayed()
        box = browser.find_element(By.ID, "texts")
        assert box.get_attribute("value")  # the example to start from
        box.clear()
        box.send_keys("\n".join(lines))
        browser.find_element(By.ID, "label").click()
        wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#text-results .hyp")) == 2)
        shown = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#text-results .hyp")]
        for line, text in zip(lines, shown):
            if task == "classify":
                found = model.classify(line)
                assert text.startswith(found["label"] + " (")
            else:
                found = model.entities(line)
                want = " · ".join(f"{e['type']}: {e['text']}" for e in found) or "no entity"
                assert text == want
        folder = os.environ.get("TRANSDUCE_EXPLAIN_SHOTS")  # a screenshot to look at
        if folder:
            Path(folder).mkdir(parents=True, exist_ok=True)
            browser.save_screenshot(str(Path(folder) / f"text_{task}.png"))
        browser.find_element(By.ID, "texts").clear()
        browser.find_element(By.ID, "label").click()
        wait.until(lambda b: b.find_element(By.ID, "text-error").text == "type a sentence first")

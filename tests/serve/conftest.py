"""The browser the page tests drive (fixtures reach every test module of this folder)."""

import os
import shutil
import tempfile

import pytest

from tests.helpers.serving import CHROMIUM, DRIVER, MISSING, REQUIRED


@pytest.fixture
def browser():
    """Headless Chromium through Selenium; skipped where Chromium is missing, failed where
    TRANSDUCE_REQUIRE_CHROMIUM=1 (CI) asks for it."""
    if not (CHROMIUM and DRIVER):
        (pytest.fail if REQUIRED else pytest.skip)(MISSING)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1200,1000",
    ):
        options.add_argument(flag)
    # Chromium leaves its singleton-socket folder in TMPDIR after quit: a short one of the
    # test's (a pytest tmp_path under xdist makes the socket's path too long), removed after
    scratch = tempfile.mkdtemp(prefix="chromium-")
    env = {**os.environ, "TMPDIR": scratch}
    try:
        driver = webdriver.Chrome(service=Service(DRIVER, env=env), options=options)
        yield driver
        driver.quit()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

"""A real `transduce serve` for the tests, and where the browser tests find Chromium."""

import contextlib
import os
import re
import select
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
# .ci/run sets it: there a missing browser fails the browser tests instead of skipping them,
# so CI cannot go green with them unrun.
REQUIRED = os.environ.get("TRANSDUCE_REQUIRE_CHROMIUM") == "1"
MISSING = "no Chromium here: apt-get install -y chromium chromium-driver (.ci/run does)"


@contextlib.contextmanager
def serve(run, *args):
    """A real `transduce serve RUN` on 127.0.0.1, on the free port it chose itself (--port 0:
    no race with other tests for a port picked beforehand); yields its URL once /health
    answers."""
    process = subprocess.Popen(
        [sys.executable, "-m", "transduce", "serve", str(run), "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        bufsize=0,
    )
    try:
        seen, found, deadline = b"", None, time.time() + 60
        while found is None:  # the line that names the port it chose
            if time.time() > deadline:
                pytest.fail(f"transduce serve did not start: {seen.decode(errors='replace')}")
            if select.select([process.stdout], [], [], 0.2)[0]:
                chunk = os.read(process.stdout.fileno(), 65536)
                if not chunk:  # it ended
                    pytest.fail(f"transduce serve ended: {seen.decode(errors='replace')}")
                seen += chunk
                found = re.search(rb"http://127\.0\.0\.1:\d+/", seen)
        url = found.group(0).decode()
        while True:
            try:
                urllib.request.urlopen(url + "health", timeout=1)
                break
            except OSError:
                if process.poll() is not None or time.time() > deadline:
                    pytest.fail(f"transduce serve did not answer: {seen.decode()}")
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


# The browser tests' steps: wait for a condition, find elements, keep a screenshot.
def wait(browser, condition, seconds=60):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, seconds).until(lambda b: condition(b))


def css(browser, selector):
    from selenium.webdriver.common.by import By

    return browser.find_elements(By.CSS_SELECTOR, selector)


def shot(browser, name, selector):
    """With TRANSDUCE_EXPLAIN_SHOTS=DIR, a screenshot of the element ``selector`` there."""
    folder = os.environ.get("TRANSDUCE_EXPLAIN_SHOTS")
    if folder:
        element = css(browser, selector)[0]
        browser.execute_script("arguments[0].scrollIntoView()", element)
        Path(folder).mkdir(parents=True, exist_ok=True)
        element.screenshot(str(Path(folder) / f"{name}.png"))

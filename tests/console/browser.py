"""Headless Chromium (Debian's chromium + chromium-driver) driven by selenium, for the console tests.

The browser is the real system Chromium: no mock DOM. Each browser gets a fresh profile
directory and has network features that phone home switched off, so a test run talks only
to the local server.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.wait import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WAIT_SECONDS = 10


@contextmanager
def chromium(download_dir: str | None = None, width: int = 1280, height: int = 900,
             flags: tuple[str, ...] = ()) -> Iterator[WebDriver]:
    """A headless Chromium with a fresh profile (and any further command-line ``flags``); quit and removed when
    the block ends."""
    profile = tempfile.mkdtemp(prefix="console-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run", "--disable-extensions", "--disable-default-apps",
                 f"--window-size={width},{height}", f"--user-data-dir={profile}", *flags):
        options.add_argument(flag)
    # The browser's console log (CSP violations are reported there) and the performance log.
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    if download_dir:
        options.add_experimental_option("prefs", {
            "download.default_directory": download_dir, "download.prompt_for_download": False,
        })
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        if download_dir:
            driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": download_dir})
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_for(driver: WebDriver, condition: Callable[[WebDriver], Any], timeout: float = WAIT_SECONDS) -> Any:
    """``condition``'s first truthy answer, polled every 50 ms. An element the page draws again between the
    condition's find and its read (``StaleElementReferenceException``) counts as not yet, as a missing one does: the
    next poll finds the new one (``tests/console/test_orphan_holds.py`` failed once on a summary redrawn so)."""
    return WebDriverWait(driver, timeout, poll_frequency=0.05,
                         ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(condition)


def find(driver: WebDriver, css: str, timeout: float = WAIT_SECONDS) -> WebElement:
    """The first element matching ``css`` once it is displayed."""
    def present(d: WebDriver) -> WebElement | bool:
        found = d.find_elements(By.CSS_SELECTOR, css)
        return found[0] if found and found[0].is_displayed() else False
    return wait_for(driver, present, timeout)


def text_appears(driver: WebDriver, css: str, text: str, timeout: float = WAIT_SECONDS) -> WebElement:
    def present(d: WebDriver) -> WebElement | bool:
        for el in d.find_elements(By.CSS_SELECTOR, css):
            try:
                if text in el.text:
                    return el
            except StaleElementReferenceException:  # re-rendered between find and read
                pass
        return False
    return wait_for(driver, present, timeout)


def status_says(driver: WebDriver, text: str) -> None:
    text_appears(driver, "#status", text)


def browser_log(driver: WebDriver) -> list[dict[str, Any]]:
    return list(driver.get_log("browser"))


def csp_violations(log: list[dict[str, Any]]) -> list[str]:
    return [entry["message"] for entry in log if "Content Security Policy" in entry.get("message", "")]


def wait_idle(driver: WebDriver, settle: float = 0.2) -> None:
    """Wait until no "Loading…" placeholder shows, then a little more for late handlers."""
    wait_for(driver, lambda d: "Loading" not in d.find_element(By.ID, "main").text)
    time.sleep(settle)


def session_storage(driver: WebDriver) -> dict[str, str]:
    return json.loads(driver.execute_script("return JSON.stringify(Object.assign({}, sessionStorage));"))

"""Many deletion requests: the operator's table shows 100 at a time, and the rest of the view stays in reach.

The table listed every pending request: with 1,000 the tab took 6.5 s to show (5 s of it laying out 2,000 buttons)
and the sweep, the audit trail and the agent settings sat 80,000 pixels down the page. It now shows the oldest
100 and a button that shows 100 more and says how many are left; a decision keeps what was shown, and a change of
filter starts from 100 again.

Bounded in time: every wait is explicit (10 s at most each) and a page load stops after 30 s.
"""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.console.browser import find, status_says, wait_for, wait_idle
from tests.console.test_operator import _open_operator
from tests.support.local_server import RunningServer

PENDING = 230


def _rows(driver: WebDriver) -> int:
    return len(driver.find_elements(By.CSS_SELECTOR, "#deletions tbody tr"))


def test_the_operator_sees_requests_100_at_a_time(
        browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client) -> None:
    for n in range(PENDING):
        operator_api.post("/operator/purges", json={"upn": f"user{n:03}@contoso.com"}).raise_for_status()
    _open_operator(browser, console_server, instance)
    find(browser, "#deletions")

    assert _rows(browser) == 100
    more = find(browser, "#show-more-requests")
    assert more.text == "Show 100 more (130 not shown)"
    more.click()
    wait_for(browser, lambda d: _rows(d) == 200)
    assert find(browser, "#show-more-requests").text == "Show 30 more (30 not shown)"

    # A decision reads the list again and keeps the 200 shown (one fewer pending now).
    browser.find_element(By.CSS_SELECTOR, "#deletions tbody tr button.primary").click()
    find(browser, "#confirm-ok").click()
    status_says(browser, "Approved")
    wait_for(browser, lambda d: _rows(d) == 200 and "29 not shown" in d.find_element(By.ID, "show-more-requests").text)

    find(browser, "#show-more-requests").click()
    wait_for(browser, lambda d: _rows(d) == PENDING - 1)
    done = find(browser, "#all-requests-shown")
    assert done.text == f"All {PENDING - 1} requests shown."
    assert browser.switch_to.active_element == done

    # Another filter starts from 100 again.
    browser.find_element(By.CSS_SELECTOR, "#deletion-status option[value='all']").click()
    wait_for(browser, lambda d: d.find_elements(By.ID, "show-more-requests")
             and "130 not shown" in d.find_element(By.ID, "show-more-requests").text)
    wait_idle(browser)
    assert _rows(browser) == 100

"""An error answered by a front, not by the service, is said in words: what happened and what to do.

App Service, a gateway or a proxy answers with a page of its own (HTML, no ``{"error": ...}``) when the service is
unavailable, too busy, or the sign-in is refused. The page showed such an answer as "The service answered 503."
A stand-in front, between the browser and ``serve``, answers the person's entry listing with each status in turn.

Bounded in time: every wait is explicit (10 s at most each) and a page load stops after 30 s.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from tests.console.browser import find, wait_idle
from tests.support.console_session import open_afresh
from tests.support.local_server import RunningServer
from tests.support.stand_in_front import PassingFront, serving


class _GatewayFront(PassingFront):
    """Passes every request to ``serve``, but answers the entry listing with ``status`` and an HTML page."""

    status: ClassVar[int] = 503
    answer_headers: ClassVar[dict[str, str]] = {}

    def answers_itself(self) -> bool:
        if "/memory/entries?" not in self.path:
            return False
        self.reply(self.status, b"<html><body><h1>Service Unavailable</h1></body></html>",
                   {"Content-Type": "text/html", **self.answer_headers})
        return True


@pytest.fixture
def gateway(console_server: RunningServer) -> Iterator[str]:
    _GatewayFront.backend = console_server.base_url
    with serving(_GatewayFront) as url:
        yield url


@pytest.mark.parametrize(("status", "headers", "shown"), [
    (503, {"Retry-After": "30"},
     "The service is unavailable just now. Try again in a moment. It asks to wait 30 s. (HTTP 503)"),
    (429, {}, "The service is receiving too many requests. Wait a moment and try again. (HTTP 429)"),
    (502, {}, "The service cannot be reached just now. Try again in a moment. (HTTP 502)"),
    (409, {}, "It changed meanwhile (another tab or person acted first). Reload to see it as it is now. (HTTP 409)"),
    (403, {}, "You are not allowed to do this. (HTTP 403)"),
    (401, {}, "You are not signed in, or your sign-in was refused: The service did not accept the sign-in. (HTTP 401)"),
])
def test_a_fronts_error_page_is_said_in_words(browser: WebDriver, gateway: str, instance: str, status: int,
                                              headers: dict[str, str], shown: str) -> None:
    _GatewayFront.status, _GatewayFront.answer_headers = status, headers
    open_afresh(browser, f"{gateway}/api/console", instance=instance)
    error = find(browser, "#main .error")
    wait_idle(browser)
    assert error.text == shown

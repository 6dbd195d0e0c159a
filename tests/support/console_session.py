"""The console's session in a browser tab: what a test puts in it before the page starts.

The console keeps its instance, a key sign-in and the operator's key in the tab's session storage, and reads them
when the page starts; a test sets them on the page's own origin, then loads the page again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from selenium.webdriver.remote.webdriver import WebDriver

INSTANCE_KEY = "memory-core.console.instance"
OPERATOR_STORE = "memory-core.console.operator-key"
KEY_SIGN_IN = "memory-core.console.key"

_RESET = """
  sessionStorage.clear();
  for (const [name, value] of Object.entries(arguments[0])) sessionStorage.setItem(name, value);
"""


def open_afresh(driver: WebDriver, page: str, *, instance: str | None = None,
                key_sign_in: Mapping[str, str] | None = None, operator_key: str | None = None) -> None:
    """Load ``page`` (the console's URL), empty the tab's session storage, put in it what is given (the instance;
    a key sign-in, such as ``{"key": ..., "upn": ...}``, as the key form stores it; the operator's key), and load
    ``page`` again: the console starts from exactly that session. Returns once the second load has ended; it waits
    for nothing the page's script does."""
    session: dict[str, str] = {}
    if instance is not None:
        session[INSTANCE_KEY] = instance
    if key_sign_in is not None:
        session[KEY_SIGN_IN] = json.dumps(dict(key_sign_in), ensure_ascii=False)
    if operator_key:
        session[OPERATOR_STORE] = operator_key
    driver.get(page)
    driver.execute_script(_RESET, session)
    driver.get(page)

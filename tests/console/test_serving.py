"""The console is served by the Function app: content types, caching, security headers, config."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.console.browser import browser_log, csp_violations, find
from tests.support.local_server import (
    OPERATOR_KEY,
    USER_KEY,
    RunningServer,
    running_server,
)

ASSETS = Path(__file__).resolve().parents[2] / "memory_core" / "console" / "assets"


def _asset_urls(page: str) -> list[str]:
    return re.findall(r'(?:src|href)="(/api/console/v/[^"]+)"', page)


def test_the_page_is_html_never_stored_with_a_strict_policy(console_server: RunningServer) -> None:
    response = httpx.get(f"{console_server.api}/console")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    # no-store, not no-cache: a page kept for Back showed the memory after a sign-out (test_signin.py)
    assert response.headers["cache-control"] == "no-store"
    policy = response.headers["content-security-policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'"  # no 'unsafe-inline', no 'unsafe-eval'
    assert directives["style-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert directives["object-src"] == "'none'"
    assert directives["base-uri"] == "'none'"
    assert "unsafe" not in policy
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["x-frame-options"] == "DENY"
    assert "<script>" not in response.text and " on" not in re.sub(r"\s+", " ", response.text).replace(" one", "")


def test_assets_have_their_types_and_are_immutable_under_the_current_version(console_server: RunningServer) -> None:
    page = httpx.get(f"{console_server.api}/console").text
    urls = _asset_urls(page)
    assert any(u.endswith("/app.js") for u in urls) and any(u.endswith("/style.css") for u in urls)
    types = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
    for url in urls:
        response = httpx.get(f"{console_server.base_url}{url}")
        assert response.status_code == 200, url
        assert response.headers["content-type"] == types[url[url.rfind("."):]]
        assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["content-security-policy"].startswith("default-src 'none'")
        again = httpx.get(f"{console_server.base_url}{url}", headers={"If-None-Match": response.headers["etag"]})
        assert again.status_code == 304 and again.content == b""


def test_an_old_version_is_served_fresh_and_not_cached(console_server: RunningServer) -> None:
    response = httpx.get(f"{console_server.api}/console/v/0000000000000000/app.js")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-cache"
    assert response.text == (ASSETS / "app.js").read_text()


@pytest.mark.parametrize("path", [
    "v/x/../../function_app.py", "v/x/%2e%2e/handler.py", "v/x/handler.py", "v/x/nothing.js", "app.js",
    "v/x/index.html", "v/x/vendor", "v", "v/x",
])
def test_nothing_outside_the_assets_is_served(console_server: RunningServer, path: str) -> None:
    response = httpx.get(f"{console_server.api}/console/{path}")
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/json")
    assert "import " not in response.text


@pytest.mark.parametrize(("method", "path", "headers", "status"), [
    ("POST", "", {}, 405),
    ("DELETE", "/v/x/app.js", {}, 405),
    ("OPTIONS", "/config.json", {}, 204),
    ("GET", "", {"Host": "attacker.example"}, 421),
    ("GET", "/config.json", {"Origin": "https://attacker.example"}, 403),
    ("GET", "/config.json", {"Content-Type": "application/json", "Content-Length": "100000"}, 413),
], ids=["post-405", "delete-405", "options-204", "foreign-host-421", "foreign-origin-403", "large-body-413"])
def test_every_console_answer_a_refusal_included_carries_the_security_headers(
    console_server: RunningServer, method: str, path: str, headers: dict[str, str], status: int,
) -> None:
    """The edge's refusals and the host's 405 on a console route went out with no policy, no framing rule and no
    nosniff, while every console answer promises them."""
    content = b"{}" * 50_000 if status == 413 else None
    response = httpx.request(method, f"{console_server.api}/console{path}", headers=headers, content=content)
    assert response.status_code == status
    assert response.headers["content-security-policy"].startswith("default-src 'none'")
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"


def test_config_names_the_mode_and_holds_no_secret(console_server: RunningServer) -> None:
    response = httpx.get(f"{console_server.api}/console/config.json")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    config = response.json()
    assert set(config["auth_modes"]) == {"local", "key"}
    assert config["deletion_mode"] == "operator_approval"
    assert config["entra"] is None
    assert USER_KEY not in response.text and OPERATOR_KEY not in response.text


def test_the_console_needs_no_credential_but_the_api_still_does(tmp_path: Path) -> None:
    with running_server(tmp_path, {"MEMORY_AUTH_MODE": "key"}) as server:
        assert httpx.get(f"{server.api}/console").status_code == 200
        assert httpx.get(f"{server.api}/console/config.json").json()["auth_modes"] == ["key"]
        assert httpx.get(f"{server.api}/instances/i/memory/agents").status_code == 401


def test_entra_mode_publishes_the_spa_registration_and_allows_only_the_authority(tmp_path: Path,
                                                                              browser: WebDriver) -> None:
    env = {
        "MEMORY_AUTH_MODE": "entra",
        "MEMORY_ENTRA_TENANT_ID": "11111111-2222-3333-4444-555555555555",
        "MEMORY_ENTRA_AUDIENCE": "api://memory-core",
        "MEMORY_CONSOLE_CLIENT_ID": "66666666-7777-8888-9999-000000000000",
        "MEMORY_CONSOLE_API_SCOPE": "api://memory-core/Memory.ReadWrite",
    }
    with running_server(tmp_path, env) as server:
        config = httpx.get(f"{server.api}/console/config.json").json()
        assert config["entra"]["client_id"] == env["MEMORY_CONSOLE_CLIENT_ID"]
        assert config["entra"]["authority"] == f"https://login.microsoftonline.com/{env['MEMORY_ENTRA_TENANT_ID']}"
        assert config["entra"]["scopes"] == [env["MEMORY_CONSOLE_API_SCOPE"]]
        assert config["entra"]["known_authorities"] == []  # MSAL knows Microsoft's host itself
        msal = httpx.get(f"{server.api}/console/{config['entra']['msal']}")
        assert msal.status_code == 200 and msal.text.startswith("/*! @azure/msal-browser v5.30.0")
        policy = httpx.get(f"{server.api}/console").headers["content-security-policy"]
        assert "connect-src 'self' https://login.microsoftonline.com" in policy
        assert "frame-src https://login.microsoftonline.com" in policy
        # In the browser: MSAL.js loads (only in this mode) and the page offers Microsoft sign-in.
        browser.get(f"{server.api}/console")
        assert find(browser, "#signin-entra").text == "Sign in with Microsoft"
        assert browser.execute_script("return typeof window.msal?.PublicClientApplication") == "function"
        assert csp_violations(browser_log(browser)) == []


def test_other_modes_never_load_msal(console_server: RunningServer, browser: WebDriver) -> None:
    browser.get(f"{console_server.api}/console")
    find(browser, "#scope-title")
    assert browser.execute_script("return typeof window.msal") == "undefined"
    assert not browser.find_elements(By.CSS_SELECTOR, "script[src*=vendor]")


def test_the_vendored_library_keeps_its_licence() -> None:
    licence = (ASSETS / "vendor" / "msal-browser.LICENSE.txt").read_text()
    assert "MIT License" in licence and "Microsoft Corporation" in licence


def test_no_console_module_parses_html_or_evaluates_strings() -> None:
    """Memory content reaches the DOM only as text: no innerHTML, no eval, no string timers."""
    for script in ASSETS.glob("*.js"):
        source = script.read_text()
        for forbidden in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert forbidden not in source, f"{script.name} uses {forbidden}"


def test_api_answers_the_console_shows_are_never_stored(console_server: RunningServer, local_api: httpx.Client,
                                                        operator_api: httpx.Client) -> None:
    """A person's memory, their trail and an operator's lists are no-store: no browser or proxy keeps them, so Back
    or a shared machine's cache cannot show them after a sign-out. Refusals too; public documents say nothing."""
    local_api.post("/memory/append", json={"scope": "user", "content_markdown": "a private fact"}).raise_for_status()
    answers = {
        "entries": local_api.get("/memory/entries", params={"scope": "user"}),
        "agents": local_api.get("/memory/agents"),
        "search": local_api.get("/memory/search", params={"scope": "user", "q": "private"}),
        "export": local_api.get("/memory/export", params={"scope": "user"}),
        "audit": local_api.get("/memory/audit"),
        "deletions": local_api.get("/memory/deletions", params={"status": "pending"}),
        "append": local_api.post("/memory/append", json={"scope": "user", "content_markdown": "another"}),
        "operator deletions": operator_api.get("/operator/deletions"),
        "a refusal": local_api.get("/operator/deletions"),
        "not found": local_api.delete("/memory/entries/no-such-entry"),
    }
    assert {name: (r.status_code, r.headers.get("cache-control")) for name, r in answers.items()
            if r.headers.get("cache-control") != "no-store"} == {}
    assert answers["a refusal"].status_code in (401, 403)
    assert "cache-control" not in httpx.get(f"{console_server.api}/openapi.json").headers

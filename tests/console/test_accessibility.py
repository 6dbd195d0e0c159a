"""Accessibility checked in the browser: every control has a label, and text contrast meets WCAG AA.

Contrast is computed from the rendered page (computed colours, the first opaque background
up the tree) for every element that shows text, in the person's view, the operator's view
and the confirmation dialog: at least 4.5:1, or 3:1 for large text (24px, or 18.66px bold).
The focus outline must reach 3:1 against the page (WCAG 1.4.11).
"""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.console.browser import find, wait_idle
from tests.console.conftest import open_console
from tests.support.local_server import OPERATOR_KEY, RunningServer

AUDIT = r"""
const parse = (c) => { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return null;
  const p = m[1].split(',').map(Number); return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1}; };
const lum = ({r, g, b}) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
const background = (el) => { for (let e = el; e; e = e.parentElement) {
    const c = parse(getComputedStyle(e).backgroundColor); if (c && c.a > 0.5) return c; }
  return {r: 255, g: 255, b: 255, a: 1}; };
const failures = [];
const root = arguments[0] ? document.querySelector(arguments[0]) : document.body;
for (const el of root.querySelectorAll('*')) {
  const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
  if (!own || !el.getClientRects().length) continue;
  const s = getComputedStyle(el);
  if (s.visibility === 'hidden' || s.display === 'none' || el.closest('.visually-hidden, .skip, [hidden]')) continue;
  if (el.closest('button:disabled')) continue;  // disabled controls are exempt (WCAG 1.4.3)
  const size = parseFloat(s.fontSize), bold = Number(s.fontWeight) >= 700;
  const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
  const r = ratio(parse(s.color), background(el));
  if (r < need) failures.push(`${el.tagName.toLowerCase()}.${el.className} "${el.textContent.trim().slice(0, 30)}": ${r.toFixed(2)} < ${need}`);
}
const unlabelled = [...root.querySelectorAll('input, select, textarea')].filter((c) => c.type !== 'hidden'
  && !(c.labels && c.labels.length) && !c.getAttribute('aria-label') && !c.getAttribute('aria-labelledby'))
  .map((c) => c.outerHTML.slice(0, 80));
const unnamedButtons = [...root.querySelectorAll('button')].filter((b) => !b.textContent.trim() && !b.getAttribute('aria-label'))
  .map((b) => b.outerHTML.slice(0, 80));
return {failures, unlabelled, unnamedButtons};
"""


def _audit(driver: WebDriver, root: str | None = None) -> None:
    result = driver.execute_script(AUDIT, root)
    assert result == {"failures": [], "unlabelled": [], "unnamedButtons": []}


def test_person_and_operator_views_pass_contrast_and_labels(browser: WebDriver, console_server: RunningServer,
                                                            instance: str, local_api: httpx.Client) -> None:
    local_api.post("/memory/append", json={"scope": "user", "content_markdown": "- likes `code` and [links](https://a.example)",
                                           "tags": ["t1"]}).raise_for_status()
    entry = local_api.post("/memory/append", json={"scope": "agent", "agent_object_id": "a-1", "agent_name": "Agent",
                                                   "content_markdown": "> quoted\n\n![img](https://x.example/i.png)"}).json()
    local_api.delete(f"/memory/entries/{entry['entry_id']}")  # a pending notice on the page
    open_console(browser, console_server, instance, operator_key=OPERATOR_KEY)
    find(browser, "#pending")
    _audit(browser)

    browser.find_element(By.CSS_SELECTOR, "#entries button.danger").click()
    find(browser, "dialog#confirm[open]")
    _audit(browser, "dialog#confirm")
    browser.find_element(By.ID, "confirm-cancel").click()

    browser.find_element(By.ID, "tab-audit").click()
    find(browser, "#own-audit")
    _audit(browser)

    browser.find_element(By.ID, "tab-operator").click()
    find(browser, "#deletions")
    wait_idle(browser)
    find(browser, "#settings-agent").send_keys("a-1")
    browser.find_element(By.XPATH, "//button[text()='Load settings']").click()
    find(browser, "#settings-form")
    _audit(browser)

    # the audit is not vacuous: pale text and an unlabelled field are caught
    browser.execute_script("""const p = document.createElement('p'); p.id = 'pale'; p.textContent = 'pale text';
        p.style.color = '#aaaaaa'; const i = document.createElement('input'); p.append(i);
        document.getElementById('main').append(p);""")
    result = browser.execute_script(AUDIT, "#main")
    assert len(result["failures"]) == 1 and "pale text" in result["failures"][0]
    assert len(result["unlabelled"]) == 1


def test_the_focus_outline_stands_out_from_the_page(browser: WebDriver, console_server: RunningServer,
                                                    instance: str) -> None:
    open_console(browser, console_server, instance)
    outline, page = browser.execute_script("""
        document.querySelector('#add-form button').focus({focusVisible: true});
        const s = getComputedStyle(document.activeElement);
        return [s.outlineColor, getComputedStyle(document.body).backgroundColor];""")
    script = AUDIT.split("const failures")[0] + "return ratio(parse(arguments[0]), parse(arguments[1]));"
    assert browser.execute_script(script, outline, page) >= 3

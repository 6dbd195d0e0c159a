"""The person's view renders any stored entry in time proportional to its length.

``console/assets/markdown.js`` finds inline markdown with one regular expression. An entry of "[a](" repeated, with
no ")", once made the engine try every split of the address at every "[": a 64 KB entry (any agent can write one)
froze the person's view for minutes, and with it the only place they could forget it. Node runs the console's module
as the browser loads it, with a stand-in for the few DOM calls it makes, on the worst texts found, each near the
64 KiB write limit; the DOM is the browser's cost and the same for any text.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

MARKDOWN = Path(__file__).resolve().parents[2] / "memory_core" / "console" / "assets" / "markdown.js"

_DRIVER = """
class Node { constructor(tag, text) { this.tag = tag; this.text = text; this.children = []; this.attrs = {};
  this.dataset = {}; } get childNodes() { return this.children; }
  append(...c) { this.children.push(...c); } setAttribute(k, v) { this.attrs[k] = v; } addEventListener() {} }
globalThis.Node = Node;
globalThis.document = { createElement: (t) => new Node(t), createTextNode: (s) => new Node("#text", s) };
const md = await import(process.argv[1]);
let input = "";
for await (const chunk of process.stdin) input += chunk;
const texts = JSON.parse(input);
const flat = (n) => n.tag === "#text" ? n.text : n.tag === "a" ? `<a ${n.attrs.href}>${n.children.map(flat).join("")}</a>`
  : n.children.map(flat).join("");
const out = {};
for (const [name, text] of Object.entries(texts)) {
  const t0 = performance.now();
  const root = md.renderMarkdown(text);
  out[name] = [performance.now() - t0, flat(root).slice(0, 200)];
}
console.log(JSON.stringify(out));
"""

SIZE = 65_000


def _repeated(piece: str) -> str:
    return piece * (SIZE // len(piece))


WORST = {
    "a link never closed": _repeated("[a]("),
    "an image never closed": _repeated("![]("),
    "brackets": _repeated("["),
    "an address and a title never closed": _repeated("[a](x "),
    "autolinks never closed": _repeated("<http://"),
    "a heading's trailing spaces": "# a" + " " * SIZE + "#x",
    "backticks": "``" + _repeated("`a"),
    "strong, never closed": _repeated("**a"),
    "quotes nested to the limit": _repeated(">") + " a",  # once a stack overflow (test_markdown_nesting.py)
    "quotes nested on every line": "\n".join(">" * n for n in range(1, 360)),
}


def _render(texts: dict[str, str]) -> dict[str, tuple[float, str]]:
    node = shutil.which("node")
    assert node, "node is needed (scripts/test checks it for the Cosmos DB test server)"
    done = subprocess.run([node, "--input-type=module", "-e", _DRIVER, str(MARKDOWN)], input=json.dumps(texts),
                          capture_output=True, text=True, timeout=120, check=True)
    return {name: (ms, shown) for name, (ms, shown) in json.loads(done.stdout).items()}


@pytest.mark.alone
def test_the_worst_texts_render_in_milliseconds() -> None:
    """Each ~64 KB text renders in well under a second (the fixed renderer: about 1 ms; before, the first two did
    not finish in 10 s, brackets took 2.2 s and a heading's spaces 1.5 s). Each text's fastest of three renders,
    as other processes only add to a render's time: one render of "strong, never closed" took 419 ms beside the
    suite's parallel workers on a loaded machine."""
    runs = [_render(WORST) for _ in range(3)]
    fastest = {name: min(run[name][0] for run in runs) for name in WORST}
    assert {name: round(ms) for name, ms in fastest.items() if ms > 250} == {}


@pytest.mark.parametrize(("text", "shown"), [
    ("[docs](https://example.com/a)", "<a https://example.com/a>docs</a>"),
    ('[docs](https://example.com/a "a title")', "<a https://example.com/a>docs</a>"),
    ("[Foo](https://en.wikipedia.org/wiki/Foo_(bar))", "<a https://en.wikipedia.org/wiki/Foo_(bar)>Foo</a>"),
    ("see <https://example.com>", "see <a https://example.com>https://example.com</a>"),
    ("![chart](https://example.com/c.png)", "[image: chart] https://example.com/c.png"),
    ("[x](javascript:alert(1))", "x (javascript:alert(1))"),
    ("## Title ##", "Title"),
])
def test_links_images_and_headings_still_render(text: str, shown: str) -> None:
    assert _render({"text": text})["text"][1] == shown

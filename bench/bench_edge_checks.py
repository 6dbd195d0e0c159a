"""Benchmark: what the edge's text checks add to a request.

Run from the repository root:

    python bench/bench_edge_checks.py

Two checks, each beside what it sits next to:

- the strict JSON decoder (``memory_core.wire.json_text.loads``: strict UTF-8, nesting, lone
  surrogates, an object naming a member twice) beside plain ``json.loads`` of the same bytes,
  and the part of it that refuses a member named twice (``json.loads`` with its
  ``object_pairs_hook``): an append body, an MCP tools/call, a 1 MiB import and a body of
  10,000 small objects;
- the hidden-text check (``memory_core.domain.hidden_text.hidden_character``: Unicode tag
  characters outside an emoji flag, variation selectors that vary no character) beside the
  secret scan every write already pays, on the secret corpora's ordinary memory lines cut to
  1 KiB and 64 KiB, the same with an emoji and its selector (❤️) every 64 characters, which
  takes the check's second pass, 64 KiB of nothing but that emoji (a selector every second
  character), Cyrillic prose with that emoji every 64 characters, 64 KiB of a symbol each with
  a selector (every selector's character collected and looked up: the check's worst case),
  Persian prose with a zero-width non-joiner in about one word in three, 64 KiB of emoji
  families (two zero-width joiners each), and 64 KiB of ASCII;
- the check of texts it refuses for a stray selector: a line with a selector after a letter beyond
  ASCII, a different letter each call (about 2,000 in turn, more than the 512 compiled patterns
  Python keeps) and the same line each call, and 64 KiB of a symbol each with a selector, then a
  stray (more selectors to look at than the check walks one by one).

Medians and p99 in microseconds over many calls after a warm-up. Numbers depend on the
machine and its load; compare runs made on the same machine.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_secret_scan import cut_to_bytes, measure, ordinary_lines

from memory_core.domain.hidden_text import hidden_character
from memory_core.secrets import SecretScanner
from memory_core.wire import json_text
from memory_core.wire.json_text import _unique_members


def fmt(us: float) -> str:
    """Microseconds to one decimal below a millisecond, else milliseconds to two."""
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.1f} µs"


def bodies() -> dict[str, bytes]:
    """Request bodies as clients send them."""
    lines = ordinary_lines()
    return {
        "append body": json.dumps({"scope": "user", "content_markdown": "- Prefers concise answers.",
                                   "reason": "user said so", "tags": ["mem_type:user-profile"]}).encode(),
        "MCP tools/call": json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "append_memory", "arguments": {"scope": "user", "memory": "- likes trains"},
            "_meta": {"progressToken": 3}}}).encode(),
        "1 MiB import": json.dumps({"scope": "user", "mode": "append",
                                    "content_markdown": cut_to_bytes(lines, 1 << 20)}).encode(),
        "10,000 small objects": json.dumps({"items": [{"a": i, "b": str(i), "c": [i]} for i in range(10000)]}).encode(),
    }


_CYRILLIC = (
    "\u041f\u0440\u0435\u0434\u043f\u043e\u0447\u0438\u0442\u0430\u0435\u0442 \u0447\u0430\u0439 "
    "\u0431\u0435\u0437 \u0441\u0430\u0445\u0430\u0440\u0430, \u0440\u0430\u0431\u043e\u0442\u0430\u0435\u0442 "
    "\u0438\u0437 \u0434\u043e\u043c\u0430 \u043f\u043e \u043f\u044f\u0442\u043d\u0438\u0446\u0430\u043c. "
) * 4


_PERSIAN = (
    "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645 \u0686\u0627\u06cc \u0628\u06cc\u200c\u0634\u06a9\u0631 "
    "\u0628\u0646\u0648\u0634\u0645 \u0648 \u062c\u0645\u0639\u0647\u200c\u0647\u0627 \u0627\u0632 "
    "\u062e\u0627\u0646\u0647 \u06a9\u0627\u0631 \u0645\u06cc\u200c\u06a9\u0646\u0645. "
)


def texts() -> dict[str, str]:
    """Text a write stores: the ordinary corpus (not all ASCII), the same with emoji, and plain ASCII."""
    lines = ordinary_lines()
    ordinary = {size: cut_to_bytes(lines, size) for size in (1024, 65536)}
    with_emoji = {size: "".join(text[at:at + 64] + " \u2764\ufe0f" for at in range(0, len(text), 64))
                  for size, text in ordinary.items()}
    return {"1 KiB ordinary": ordinary[1024], "64 KiB ordinary": ordinary[65536],
            "1 KiB with emoji": with_emoji[1024], "64 KiB with emoji": with_emoji[65536],
            "64 KiB of emoji only": "\u2764\ufe0f" * (65536 // 6),
            # Cyrillic prose (two bytes a letter), with the same emoji every 64 characters.
            "64 KiB Cyrillic with emoji": "".join(
                _CYRILLIC[at % len(_CYRILLIC):][:64] + " \u2764\ufe0f" for at in range(0, 65536, 64)
            ).encode()[:65536].decode(errors="ignore"),
            # Persian prose, a zero-width non-joiner in about one word in three: each takes the check's second pass.
            "64 KiB Persian with non-joiners": (_PERSIAN * (65536 // len(_PERSIAN.encode()) + 1)).encode()[:65536]
            .decode(errors="ignore"),
            # Emoji families, two joiners each: the most zero-width characters ordinary text holds.
            "64 KiB of emoji families": "\U0001f468\u200d\U0001f469\u200d\U0001f467 " * (65536 // 19),
            # A selector after each of a symbol the quick skip does not know: every one is collected.
            "64 KiB of symbols with selectors": "\u20ac\ufe00" * (65536 // 6),
            "64 KiB ASCII": cut_to_bytes([line for line in lines if line.isascii()], 65536)}


def refused_lines() -> list[str]:
    """A line with a selector after a letter beyond ASCII, for each such letter below U+30000 that has none."""
    letters = (chr(code) for code in range(0x100, 0x30000) if unicodedata.category(chr(code)) in ("Ll", "Lu"))
    return [line for line in (f"- prefers {letter}\ufe01 tea" for letter in letters) if hidden_character(line)][:2000]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=2000, help="calls per small case (large ones: a tenth)")
    args = parser.parse_args()

    print("| body | bytes | json.loads median | strict median | strict p99 | added | of which the member check |"
          "\n|---|---:|---:|---:|---:|---:|---:|")
    for name, body in bodies().items():
        n = args.iterations if len(body) < 10_000 else max(20, args.iterations // 10)
        plain, _, _ = measure(json.loads, body, n)  # type: ignore[arg-type]
        hooked, _, _ = measure(lambda b: json.loads(b, object_pairs_hook=_unique_members), body, n)  # type: ignore[arg-type]
        strict, p99, _ = measure(json_text.loads, body, n)  # type: ignore[arg-type]
        print(f"| {name} | {len(body):,} | {fmt(plain)} | {fmt(strict)} | {fmt(p99)} | +{fmt(strict - plain)} "
              f"| +{fmt(hooked - plain)} |")

    scanner = SecretScanner()
    print("\n| text | hidden-text median | p99 | secret scan median | check / scan |\n|---|---:|---:|---:|---:|")
    for name, text in texts().items():
        n = args.iterations if len(text) < 10_000 else max(20, args.iterations // 10)
        hidden, p99, _ = measure(hidden_character, text, n)
        scan, _, _ = measure(scanner.scan, text, n)
        print(f"| {name} | {hidden:.2f} µs | {p99:.2f} µs | {fmt(scan)} | {hidden / scan:.1%} |")

    print("\n| refused text | hidden-text median | p99 |\n|---|---:|---:|")
    lines = refused_lines()
    in_turn = itertools.cycle(lines)
    long_text = "\u20ac\ufe0f" * 21800 + "\u0436\ufe01"
    for name, check, text, n in (
            (f"a line, a different letter each ({len(lines):,} in turn)", lambda _: hidden_character(next(in_turn)),
             "", args.iterations),
            ("a line, the same each time", hidden_character, lines[0], args.iterations),
            ("64 KiB of symbols with selectors, then a stray", hidden_character, long_text,
             max(20, args.iterations // 10))):
        refused, p99, _ = measure(check, text, n)
        print(f"| {name} | {refused:.2f} µs | {p99:.2f} µs |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Detection and false-positive rates of the scanner on the sensitive-values corpus, per part and class.

Run from the repository root:

    python bench/bench_sensitive_holdout.py

The corpus (``tests/secrets/corpus/sensitive_values.py``) is dealt into a tune
part (two thirds; the detectors were developed against it) and a held-out part
(one third; never used while tuning). docs/performance.md quotes the held-out
figures. Deterministic: the corpus is generated from a fixed seed.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.secrets import SecretScanner
from tests.secrets.corpus.sensitive_values import HELD_OUT, TUNE, Labelled


def report(name: str, items: list[Labelled], scanner: SecretScanner) -> None:
    total: Counter[str] = Counter()
    refused: Counter[str] = Counter()
    for item in items:
        total[(item.kind, item.sensitive)] += 1
        if scanner.scan(item.text):
            refused[(item.kind, item.sensitive)] += 1
    sensitive = sum(n for (_, s), n in total.items() if s)
    caught = sum(n for (_, s), n in refused.items() if s)
    ordinary = sum(n for (_, s), n in total.items() if not s)
    flagged = sum(n for (_, s), n in refused.items() if not s)
    print(f"## {name}: {len(items)} items")
    print(f"sensitive refused: {caught}/{sensitive} = {caught / sensitive:.1%}")
    print(f"ordinary flagged (false positives): {flagged}/{ordinary} = {flagged / ordinary:.1%}")
    for (kind, is_sensitive), n in sorted(total.items(), key=lambda kv: (not kv[0][1], kv[0][0])):
        label = "sensitive" if is_sensitive else "ordinary"
        print(f"  {label:9} {kind:13} {refused[(kind, is_sensitive)]:3}/{n:3} flagged")


def main() -> None:
    scanner = SecretScanner()
    report("tune (two thirds)", TUNE, scanner)
    report("held out (one third, never tuned on)", HELD_OUT, scanner)


if __name__ == "__main__":
    main()

"""Benchmark: a skeleton's cost after a flood of names of rare characters has filled the skeleton's table.

Run from the repository root (and from another checkout, to compare with it):

    python bench/bench_skeleton_flood.py [--repeat 15] [--root CHECKOUT]

The skeleton's table (``lookalike_names._skeleton_table``) keeps the unmapped characters it meets, up to a bound per
process. In a fresh process, an ordinary name first ("\u00dcbung notes.md"), then 70 names of 240 distinct CJK
characters each (another user's flood, more characters than the bound keeps), then the CPU time of one skeleton
(the least of ``--repeat`` runs of 1,000) of: a name of 60 hiragana characters the table lacks (met only after the
flood), and an 80-character German name (accented Latin, met before it). Each is also timed in a process without
the flood. ``--root`` runs another checkout's code (main's, say) with this file.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RUN = """
import sys, time, timeit
sys.path.insert(0, {root!r})
from memory_core.domain import lookalike_names
GERMAN = ("\\u00dcbersicht der Besprechungen \\u00fcber \\u00c4nderungen am Projekt \\u2013 Teil 7 \\u2013 "
          "Notizen.md")
lookalike_names.skeleton("\\u00dcbung notes.md")
lookalike_names.skeleton(GERMAN)
if {flood!r}:
    for k in range(70):
        lookalike_names.skeleton("".join(chr(0x4E00 + k * 240 + i) for i in range(240)) + ".md")
table = lookalike_names._prototype_table()
names = {{
    "60 hiragana": "".join(c for c in map(chr, range(0x3041, 0x3097)) if ord(c) not in table)[:60] + ".md",
    "80-char German": GERMAN,
}}
for label, name in names.items():
    lookalike_names.skeleton(name)
    runs = timeit.repeat(lambda: lookalike_names.skeleton(name), number=1000, repeat={repeat},
                         timer=time.process_time)
    print(f"{{label}}\\t{{min(runs) / 1000 * 1e6:.2f}}")
"""


def measured(root: Path, flood: bool, repeat: int) -> dict[str, float]:
    """The least CPU time of a skeleton per name, in µs, in a fresh process running ``root``'s code."""
    code = RUN.format(root=str(root), flood=flood, repeat=repeat)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         timeout=600).stdout
    return {label: float(value) for label, value in (line.split("\t") for line in out.splitlines())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args()
    started = time.perf_counter()
    for flood in (False, True):
        for label, micros in measured(args.root.resolve(), flood, args.repeat).items():
            print(f"{'after a flood' if flood else 'no flood':14} {label:16} {micros:8.2f} us")
    print(f"({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()

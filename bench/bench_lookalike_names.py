"""Benchmark: the memory tool's look-alike check in a create, by the number of names beside the new one.

Run from the repository root (and from another checkout, to compare with it):

    python bench/bench_lookalike_names.py [--siblings 1,100,10000] [--repeat 7] [--root CHECKOUT] [--cpu]

For each count, a namespace with that many files in one directory (``d/``; past the index's bound of 2,000
files a directory this large is ``appended/``, the entries written outside the memory tool) and
``memory_files.create`` of a new file there, in process: the median over ``--repeat`` runs of the time
per create, the whole command on the namespace (path rules, reserved names, the look-alike check, the copy
of the namespace) and not the store's write; and of the check alone (``memory_paths.lookalike_of`` over
the directory's names, as ``refuse_lookalike`` calls it), and of the check with nothing kept from the runs
before (the fold and skeletons kept per process of the names not all ASCII, ``lookalike_names._sibling_forms``,
forgotten before each: a process's first check of a directory). ``--root`` runs another checkout's code (main's,
say) with this file. Six shapes: an ASCII name among ASCII names (most creates); an accented name among ASCII names;
a Latin look-alike spelled with a Cyrillic letter among ASCII names (its skeleton is ASCII, so each ASCII name's
skeleton is compared); an ASCII name among names one in ten of which is Cyrillic; a Cyrillic name among Cyrillic
names (a Russian speaker's directory); a long name (80 characters, German with umlauts and a dash) among long names
of its kind, which share all but their number. Unicode's table is loaded before the runs (its first load is measured
apart, in a fresh process: ``--first-load``). ``--cpu`` times the process's own CPU time instead of the wall clock:
on a machine busy with other work the wall clock counts the time the process waits for a core.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if "--root" in sys.argv:
    ROOT = Path(sys.argv[sys.argv.index("--root") + 1]).resolve()
sys.path.insert(0, str(ROOT))

from memory_core.domain import lookalike_names, memory_files, memory_paths
from memory_core.domain.memory_files import FileNode, Namespace

LONG = "\u00dcbersicht der Besprechungen \u00fcber \u00c4nderungen am Projekt \u2013 Teil {} \u2013 Notizen.md"
CYRILLIC = "\u0437\u0430\u043c\u0435\u0442\u043a\u0430-{}.md"

# A shape: the new name, and the kind of the names beside it ("ascii", "1/10 cyrillic", "cyrillic", "long").
SHAPES = {
    "ascii among ascii": ("new-note.md", "ascii"),
    "accented among ascii": ("caf\u00e9-notes.md", "ascii"),
    "cyrillic look-alike among ascii": ("n\u043ew-note.md", "ascii"),
    "ascii among 1/10 cyrillic": ("new-note.md", "1/10 cyrillic"),
    "cyrillic among cyrillic": (CYRILLIC.format("new"), "cyrillic"),
    "long among long": (LONG.format("new01"), "long"),
}

FIRST_LOAD = """
import time
t0 = time.perf_counter()
from memory_core.domain import lookalike_names
t1 = time.perf_counter()
lookalike_names.lookalike_of("n\\u043etes.md", ["notes.md"])
t2 = time.perf_counter()
print(f"{(t1 - t0) * 1e3:.2f} {(t2 - t1) * 1e3:.2f}")
"""


def namespace(siblings: int, kind: str) -> Namespace:
    ns = Namespace(dirs={"d"})
    for n in range(siblings):
        if kind == "long":
            name = LONG.format(f"{n:05d}")
        elif kind == "cyrillic" or (kind == "1/10 cyrillic" and n % 10 == 0):
            name = CYRILLIC.format(f"{n:05d}")
        else:
            name = f"note-{n:05d}.md"
        ns.files[f"d/{name}"] = FileNode(f"note {n}\n", f"e{n}")
    return ns


def per_call(call: Callable[[], object], size: int, repeat: int, clock: Callable[[], float]) -> float:
    runs = max(1, 20_000 // max(1, size))
    times = []
    for _ in range(repeat):
        started = clock()
        for _ in range(runs):
            call()
        times.append((clock() - started) / runs)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--siblings", default="1,100,10000")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--first-load", action="store_true", help="time the table's first load in fresh processes")
    parser.add_argument("--root", default=str(ROOT), help="the checkout whose memory_core is measured")
    parser.add_argument("--cpu", action="store_true", help="time the process's CPU time, not the wall clock")
    args = parser.parse_args()
    clock = time.process_time if args.cpu else time.perf_counter
    if args.first_load:
        loads = [subprocess.run([sys.executable, "-c", FIRST_LOAD], cwd=ROOT, capture_output=True, text=True,
                                check=True).stdout.split() for _ in range(args.repeat)]
        print(f"import lookalike_names: median {statistics.median(float(a) for a, _ in loads):.2f} ms; "
              f"first non-ASCII check (loads the table): median {statistics.median(float(b) for _, b in loads):.2f} ms")
        return
    memory_paths.lookalike_of("n\u043etes.md", ["notes.md"])  # the table loaded, where there is one
    kept = getattr(lookalike_names, "_sibling_forms", None)  # a checkout from before it keeps nothing
    forget: Callable[[], object] = kept.cache_clear if kept is not None else lambda: None
    print(f"{ROOT}\n{'siblings':>8}  {'shape':<34} {'per create':>12} {'the check':>12} {'nothing kept':>13}")
    for siblings in (int(n) for n in args.siblings.split(",")):
        for shape, (name, kind) in SHAPES.items():
            ns = namespace(siblings, kind)
            names = [path.removeprefix("d/") for path in ns.files]
            create = per_call(lambda: memory_files.create(ns, f"/memories/d/{name}", "x"), siblings, args.repeat, clock)
            check = per_call(lambda: memory_paths.lookalike_of(name, names), siblings, args.repeat, clock)
            first = per_call(lambda: (forget(), memory_paths.lookalike_of(name, names)), siblings, args.repeat, clock)
            print(f"{siblings:>8}  {shape:<34} {create * 1e6:>9.1f} µs {check * 1e6:>9.1f} µs {first * 1e6:>10.1f} µs",
                  flush=True)


if __name__ == "__main__":
    main()

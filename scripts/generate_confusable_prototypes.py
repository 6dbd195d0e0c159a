"""Write memory_core/domain/confusable_prototypes.py from Unicode's confusables.txt (UTS #39), or check it.

The input is pinned (``PINNED``): Unicode's file at ``PINNED.url``, whose header says ``Version: 17.0.0`` and
``Date: 2025-07-22, 05:49:37 GMT``, and whose bytes have ``PINNED.sha256``. Run from the repository root, with that
file downloaded beside you:

    python scripts/generate_confusable_prototypes.py confusables.txt           # write the module
    python scripts/generate_confusable_prototypes.py --check confusables.txt   # exit 1 if the module differs

A file whose header names another version or date, or whose sha256 is not the pinned one (tampered, re-saved with
other line ends or a byte-order mark, cut short), is refused before anything is written (exit 1), so regenerating
from the same input always writes the same module and ``--check`` tells a hand-edited or stale module from one
the pinned file makes. ``--check`` compares bytes: a copy of the module re-saved with CRLF line ends fails it.
The module the pinned file makes has the sha256 ``PINNED_MODULE_SHA256`` (printed by each write), which the tests
hold the vendored module's bytes to, so a hand edit of one mapping fails without Unicode's file at hand. A write
(and ``--check``) whose module would have another sha256 is refused too, writing nothing (exit 1, naming both
digests): the pinned file run by a Python whose Unicode database is older (below) makes another module, which must
not replace the vendored one unnoticed. Moving to a new version is a change of ``PINNED`` (its URL, the header's
version and date, and the new file's sha256) and of ``PINNED_MODULE_SHA256`` (the digest the refused write names),
reviewed with the module the write then makes; say so in docs/memory-tool.md.

The module keeps what the memory tool's look-alike check reads (``domain/lookalike_names.py``): every
character the file maps (``SOURCES``) and its prototype (``PROTOTYPES``, one per source, separated by
``SEPARATOR``), taken to its own skeleton (NFD, and the table again, until nothing changes: a few of Unicode's
prototypes hold a character the table maps once decomposed, "\u01c6" is "d\u017e", whose caron it maps), so that
one pass makes a skeleton; as escaped string literals, which a compiled module loads in microseconds where parsing the
text took 10 to 30 ms; and Unicode's header (version, date, copyright and terms of use), which its licence
asks copies to keep. The module depends on the Python that runs this script only through ``unicodedata``'s NFD
(the closure above): a Python whose Unicode database is older than the file's version may write another module,
which ``--check`` reports.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

OUTPUT = Path(__file__).resolve().parents[1] / "memory_core" / "domain" / "confusable_prototypes.py"
SEPARATOR = "\n"
WIDTH = 112


@dataclass(frozen=True)
class Pin:
    """The one input the module is made from: where Unicode publishes it, what its header says, its bytes' sha256;
    and the sha256 of the module it makes (``module_text`` as UTF-8)."""

    url: str
    version: str
    date: str
    sha256: str
    module_sha256: str


# The sha256 of the module PINNED's file makes (``module_text``, as UTF-8): the vendored module's bytes have it.
PINNED_MODULE_SHA256 = "05a0e28515f0892f2971013705014d2a4c6a683df01a35a464516739d9f5d6cf"

# The sha256 of the file at the URL, as two unrelated projects pinned it (this machine cannot reach unicode.org),
# and of the copy the vendored module was made from (``--check`` of it passes).
PINNED = Pin(
    url="https://www.unicode.org/Public/17.0.0/security/confusables.txt",
    version="17.0.0",
    date="2025-07-22, 05:49:37 GMT",
    sha256="091c7f82fc39ef208faf8f94d29c244de99254675e09de163160c810d13ef22a",
    module_sha256=PINNED_MODULE_SHA256,
)


class UnpinnedInput(ValueError):
    """The file given is not the pinned one (another version or date in its header, or other bytes), or the module
    it makes here is not the pinned one."""


def mappings(source: str, header_only: bool = False) -> tuple[list[str], list[tuple[str, str]]]:
    """Unicode's header lines (up to the first mapping), and each mapping: a character and its prototype (none
    when ``header_only``). Raises ValueError for a line that is not a mapping of one character."""
    header: list[str] = []
    found: list[tuple[str, str]] = []
    for raw in source.splitlines():
        line = raw.lstrip("\ufeff")
        data = line.split("#", 1)[0].strip()
        if data and header_only:
            break
        if not data:
            if not found and line.startswith("#"):
                header.append(line.lstrip("# ").rstrip())
            continue
        fields = [field.strip() for field in data.split(";")]
        if len(fields) < 3 or fields[2] != "MA" or len(fields[0].split()) != 1:
            raise ValueError(f"not a confusables.txt mapping line: {raw!r}")
        found.append((chr(int(fields[0], 16)), "".join(chr(int(code, 16)) for code in fields[1].split())))
    return header, found


def closed(found: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Each prototype replaced by its skeleton, repeated until the table changes it no more."""
    table = {ord(source): prototype for source, prototype in found}

    def settled(text: str) -> str:
        while True:
            again = unicodedata.normalize("NFD", unicodedata.normalize("NFD", text).translate(table))
            if again == text:
                return text
            text = again

    return [(source, settled(prototype)) for source, prototype in found]


def _escaped(text: str) -> Iterator[str]:
    for character in text:
        if " " <= character <= "~" and character not in "\\\"":
            yield character
        elif ord(character) <= 0xFFFF:
            yield f"\\u{ord(character):04x}"
        else:
            yield f"\\U{ord(character):08x}"


def literal(name: str, text: str) -> str:
    """``name = (...)``: ``text`` as string literals of at most WIDTH characters a line, every other character
    escaped (the prototypes hold combining marks and right-to-left letters, which no editor shows as they are)."""
    lines, line = [], ""
    for piece in _escaped(text):
        if len(line) + len(piece) > WIDTH:
            lines.append(line)
            line = ""
        line += piece
    lines.append(line)
    body = "\n".join(f'    "{chunk}"' for chunk in lines)
    return f"{name} = (\n{body}\n)\n"


def pinned_text(data: bytes, pin: Pin) -> str:
    """``data`` as text when it is the pinned file; raises ``UnpinnedInput`` saying how it differs. The header is
    read first, so a file of another version is named as such rather than only as other bytes."""
    header, _ = mappings(data.decode("utf-8"), header_only=True)
    for field, pinned in (("Version", pin.version), ("Date", pin.date)):
        found = next((line.split(":", 1)[1].strip() for line in header if line.startswith(f"{field}:")), None)
        if found != pinned:
            raise UnpinnedInput(f"the file's header has {field}: {found}, this script is pinned to {pinned} "
                                f"({pin.url}); to move to another version, change PINNED and regenerate")
    digest = hashlib.sha256(data).hexdigest()
    if digest != pin.sha256:
        raise UnpinnedInput(f"the file's sha256 is {digest}, not the pinned {pin.sha256}: it is not {pin.url} "
                            "as published (changed, re-saved or cut short); download it again")
    return data.decode("utf-8")


def pinned_module(module: str, pin: Pin) -> bytes:
    """``module`` as the bytes to write when they have ``pin.module_sha256``; raises ``UnpinnedInput`` naming both
    digests otherwise (a Python whose ``unicodedata`` is not the file's version, or a changed generator)."""
    written = module.encode("utf-8")
    digest = hashlib.sha256(written).hexdigest()
    if digest != pin.module_sha256:
        raise UnpinnedInput(f"the module this file makes here has sha256 {digest}, not the pinned {pin.module_sha256} "
                            f"(this Python's Unicode database is {unicodedata.unidata_version}, the file's "
                            f"{pin.version}; or the generator changed): nothing written. If the module it makes is "
                            "right, set PINNED_MODULE_SHA256 to that digest and run again")
    return written


def module_text(source: str) -> str:
    """The module ``source`` (a confusables.txt's text) makes, byte for byte what ``main`` writes; raises
    ValueError for a line that is not a mapping of one character."""
    header, found = mappings(source)
    found = closed(found)
    if any(SEPARATOR in prototype for _, prototype in found):
        raise ValueError("a prototype holds the separator")
    title = "Generated by scripts/generate_confusable_prototypes.py from Unicode's confusables.txt: do not edit."
    doc = "\n".join([title, "", "Its header:", "", *header]).rstrip()
    return "\n".join([
        f'"""{doc}\n"""', "",
        f"SEPARATOR = {SEPARATOR!r}", "",
        literal("SOURCES", "".join(source for source, _ in found)),
        literal("PROTOTYPES", SEPARATOR.join(prototype for _, prototype in found)),
    ])


def first_difference(expected: str, found: str) -> str:
    """The first line where ``found`` differs from ``expected``, for a failed ``--check``'s message."""
    wanted, have = expected.splitlines(), found.splitlines()
    for number, (line, other) in enumerate(zip(wanted, have, strict=False), start=1):
        if line != other:
            return f"line {number}: {other[:60]!r}, the generator writes {line[:60]!r}"
    return f"{len(have)} lines, the generator writes {len(wanted)}"


def main(argv: list[str], pin: Pin = PINNED, output: Path = OUTPUT) -> int:
    """Write (or with ``--check``, compare with) ``output`` from the file ``argv`` names; 0 when written or
    equal, 1 when the file is not the pinned one or the module differs, 2 for a wrong command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail if the module is not what the file makes")
    parser.add_argument("confusables", type=Path, help="Unicode's confusables.txt, as downloaded")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return 2 if exit_.code else 0
    try:
        module = module_text(pinned_text(args.confusables.read_bytes(), pin))
        written = pinned_module(module, pin)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        print(f"{args.confusables}: {error}", file=sys.stderr)
        return 1
    if args.check:
        # Bytes, not text: read_text() turns a CRLF copy's line ends into line feeds, and it would pass.
        vendored = output.read_bytes() if output.exists() else b""
        if vendored != written:
            found = vendored.decode("utf-8", "replace")
            difference = first_difference(module, found) if found.splitlines() != module.splitlines() else (
                "other line ends or bytes on the same lines")
            print(f"{output} is not what {args.confusables} makes ({difference}): run this script without --check",
                  file=sys.stderr)
            return 1
        print(f"{output} is what {args.confusables} (Unicode {pin.version}) makes")
        return 0
    output.write_bytes(written)
    print(f"{module.count(chr(10))} lines written to {output} from Unicode {pin.version}, "
          f"sha256 {hashlib.sha256(written).hexdigest()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""The look-alike table's generator (``scripts/generate_confusable_prototypes.py``): its input pinned (Unicode's URL,
the header's version and date, the file's sha256), ``--check``, and the vendored module as what it writes.

Unicode's file itself cannot be downloaded here (no network), so the generator's logic runs on a small input in
confusables.txt's format, and the pin is tested with that input tampered (the right header, other bytes: refused by
the script's own pin) and with a pin made for it (accepted). The pinned digest guards the real file."""

from __future__ import annotations

import hashlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "generate_confusable_prototypes.py"
VENDORED = ROOT / "memory_core" / "domain" / "confusable_prototypes.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_confusable_prototypes", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses looks the module up by name while the class is made.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


generator = _script()

# confusables.txt's shape, with the pinned version and date: a byte-order mark, the header, comments and blank lines
# between mappings; "\u01c6" whose prototype "d\u017e" holds, once decomposed, a caron the table maps (so the module
# must hold its closure, "dz\u0306"), a quote (escaped in a literal) and a character past U+FFFF.
FIXTURE = (
    "\ufeff# confusables.txt\n"
    f"# Date: {generator.PINNED.date}\n"
    "# \u00a9 2025 Unicode\u00ae, Inc.\n"
    "#\n"
    "# Unicode Security Mechanisms for UTS #39\n"
    f"# Version: {generator.PINNED.version}\n"
    "#\n"
    "05AD ;\t0596 ;\tMA\t# ( \u05ad \u2192 \u0596 ) HEBREW ACCENT DEHI \u2192 HEBREW ACCENT TIPEHA\t# \n"
    "\n"
    "01C6 ;\t0064 017E ;\tMA\t# ( \u01c6 \u2192 d\u017e ) LATIN SMALL LETTER DZ WITH CARON\t# \n"
    "030C ;\t0306 ;\tMA\t# ( \u030c \u2192 \u0306 ) COMBINING CARON \u2192 COMBINING BREVE\t# \n"
    "FF02 ;\t0022 ;\tMA\t# ( \uff02 \u2192 \" ) FULLWIDTH QUOTATION MARK\t# \n"
    "1D400 ;\t0041 ;\tMA\t# ( \U0001d400 \u2192 A ) MATHEMATICAL BOLD CAPITAL A\t# \n"
    "\n"
    "# total: 5\n"
)


def _pin_for(data: bytes, module_sha256: str | None = None) -> generator.Pin:
    """A pin of ``data``, and of the module it makes unless ``module_sha256`` names another digest."""
    made = generator.module_text(data.decode("utf-8")).encode("utf-8")
    return generator.Pin(url="file:fixture", version=generator.PINNED.version, date=generator.PINNED.date,
                         sha256=hashlib.sha256(data).hexdigest(),
                         module_sha256=module_sha256 or hashlib.sha256(made).hexdigest())


def _loaded(text: str) -> dict[str, str]:
    space: dict[str, object] = {}
    exec(compile(text, "generated", "exec"), space)
    sources, prototypes, separator = space["SOURCES"], space["PROTOTYPES"], space["SEPARATOR"]
    assert isinstance(sources, str) and isinstance(prototypes, str) and isinstance(separator, str)
    return dict(zip(sources, prototypes.split(separator), strict=True))


def test_the_vendored_module_is_what_the_generator_makes_of_the_table_it_holds() -> None:
    """The vendored module, read back as a confusables.txt (its header, each source and prototype), is what the
    generator writes from it byte for byte: no hand edit of its layout or header, and every prototype already
    closed (the generator's closure changes none). ``--check`` with Unicode's file is the test of its content."""
    text = VENDORED.read_text(encoding="utf-8")
    docstring = text.split('"""')[1]
    header = docstring.split("Its header:\n\n", 1)[1].rstrip("\n").split("\n")
    from memory_core.domain import confusable_prototypes as vendored

    prototypes = vendored.PROTOTYPES.split(vendored.SEPARATOR)
    lines = [f"# {line}" if line else "#" for line in header]
    lines += [f"{ord(source):04X} ;\t{' '.join(f'{ord(c):04X}' for c in prototype)} ;\tMA\t# "
              for source, prototype in zip(vendored.SOURCES, prototypes, strict=True)]
    assert generator.module_text("\n".join(lines) + "\n") == text


def test_the_vendored_modules_bytes_have_the_pinned_digest_of_what_the_pinned_file_makes() -> None:
    """The vendored module's bytes have ``PINNED_MODULE_SHA256``, the digest of the module the pinned file makes: a
    hand edit of one mapping (which the read-back test above would pass, as it rebuilds its input from the module)
    or a copy re-saved with other line ends fails here without Unicode's file at hand."""
    assert re.fullmatch(r"[0-9a-f]{64}", generator.PINNED_MODULE_SHA256)
    assert hashlib.sha256(VENDORED.read_bytes()).hexdigest() == generator.PINNED_MODULE_SHA256
    edited = VENDORED.read_bytes().replace(b"\\u0430", b"\\u0431", 1)
    assert edited != VENDORED.read_bytes()
    assert hashlib.sha256(edited).hexdigest() != generator.PINNED_MODULE_SHA256


def test_the_vendored_header_names_the_pinned_version_and_date() -> None:
    """The pin and the module agree: the header the module keeps names the version and date the script is pinned
    to, and the URL is that version's."""
    header = VENDORED.read_text(encoding="utf-8").split("Its header:", 1)[1]
    assert f"\nVersion: {generator.PINNED.version}\n" in header
    assert f"\nDate: {generator.PINNED.date}\n" in header
    assert f"/{generator.PINNED.version}/" in generator.PINNED.url
    assert re.fullmatch(r"[0-9a-f]{64}", generator.PINNED.sha256)


def test_the_module_holds_each_prototype_closed_escaped_and_unicodes_header() -> None:
    """Each source with its prototype taken to its own skeleton (the caron in "d\u017e" mapped as well), as
    escaped ASCII literals of lines no longer than the style's 120 characters, and Unicode's header kept."""
    text = generator.module_text(FIXTURE)
    assert _loaded(text) == {"\u05ad": "\u0596", "\u01c6": "dz\u0306", "\u030c": "\u0306", "\uff02": '"',
                             "\U0001d400": "A"}
    body = text.split('"""')[2]
    assert body.isascii() and max(len(line) for line in text.splitlines()) <= 120
    assert "\nVersion: 17.0.0\n" in text and "\u00a9 2025 Unicode\u00ae, Inc." in text and "total" not in text


@pytest.mark.parametrize("line", ["0041 0042 ;\t0043 ;\tMA\t#", "0041 ;\t0043 ;\tSL\t#", "0041 ;\t0043\t#"])
def test_a_line_that_is_not_a_mapping_of_one_character_is_refused(line: str) -> None:
    with pytest.raises(ValueError, match=r"not a confusables\.txt mapping line"):
        generator.module_text(FIXTURE + line + "\n")


def test_check_passes_for_the_module_the_pinned_file_makes_and_fails_for_any_other(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With a pin made for the input, writing then ``--check`` passes; a module edited by one character, or missing,
    fails ``--check`` naming the line, and ``--check`` writes nothing."""
    source, module = tmp_path / "confusables.txt", tmp_path / "prototypes.py"
    source.write_text(FIXTURE, encoding="utf-8")
    pin = _pin_for(source.read_bytes())
    assert generator.main([str(source)], pin, module) == 0
    assert module.read_text(encoding="utf-8") == generator.module_text(FIXTURE)
    assert generator.main(["--check", str(source)], pin, module) == 0
    edited = module.read_text(encoding="utf-8").replace("\\u0596", "\\u0597")
    module.write_text(edited, encoding="utf-8")
    capsys.readouterr()
    assert generator.main(["--check", str(source)], pin, module) == 1
    assert "is not what" in capsys.readouterr().err and module.read_text(encoding="utf-8") == edited
    module.unlink()
    assert generator.main(["--check", str(source)], pin, module) == 1 and not module.exists()


def test_a_write_prints_the_modules_digest_and_check_refuses_a_copy_with_crlf_line_ends(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A write prints the sha256 of the bytes it wrote (what ``PINNED_MODULE_SHA256`` is set to on a move to a new
    version). ``--check`` compares bytes: the same module re-saved with CRLF line ends, the same text once read
    with universal newlines, fails, saying the lines match but their ends or bytes do not."""
    source, module = tmp_path / "confusables.txt", tmp_path / "prototypes.py"
    source.write_text(FIXTURE, encoding="utf-8")
    pin = _pin_for(source.read_bytes())
    assert generator.main([str(source)], pin, module) == 0
    written = module.read_bytes()
    assert written == generator.module_text(FIXTURE).encode("utf-8")
    assert f"sha256 {hashlib.sha256(written).hexdigest()}" in capsys.readouterr().out
    module.write_bytes(written.replace(b"\n", b"\r\n"))
    assert module.read_text(encoding="utf-8") == written.decode("utf-8")
    assert generator.main(["--check", str(source)], pin, module) == 1
    assert "other line ends or bytes on the same lines" in capsys.readouterr().err
    module.write_bytes(written)
    assert generator.main(["--check", str(source)], pin, module) == 0


def test_a_write_or_check_whose_module_has_another_digest_than_the_pinned_one_is_refused_writing_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The pinned file, but the module it makes here has another sha256 than the pin's (as a Python whose Unicode
    database is older than the file's would make): a write answers 1 naming both digests and how to move the pin,
    and leaves the module as it was (absent, then a copy written under the right pin); so does ``--check``, whose
    module's bytes are the ones made. With the made module's digest pinned, the write goes through."""
    source, module = tmp_path / "confusables.txt", tmp_path / "prototypes.py"
    source.write_text(FIXTURE, encoding="utf-8")
    data = source.read_bytes()
    made = hashlib.sha256(generator.module_text(FIXTURE).encode("utf-8")).hexdigest()
    other = hashlib.sha256(b"another module").hexdigest()
    wrong = _pin_for(data, module_sha256=other)
    capsys.readouterr()
    assert generator.main([str(source)], wrong, module) == 1 and not module.exists()
    refusal = capsys.readouterr()
    assert f"sha256 {made}, not the pinned {other}" in refusal.err and "nothing written" in refusal.err
    assert "PINNED_MODULE_SHA256" in refusal.err and refusal.out == ""
    assert generator.main([str(source)], _pin_for(data), module) == 0
    kept = module.read_bytes()
    assert hashlib.sha256(kept).hexdigest() == made
    module.write_bytes(kept.replace(b"\\u0596", b"\\u0597"))
    edited = module.read_bytes()
    assert edited != kept
    for argv in ([str(source)], ["--check", str(source)]):
        assert generator.main(argv, wrong, module) == 1, argv
        assert f"not the pinned {other}" in capsys.readouterr().err
        assert module.read_bytes() == edited


def test_a_file_with_the_pinned_header_but_other_bytes_is_refused_before_anything_is_written(
        tmp_path: Path) -> None:
    """The script as run, with its own pin: a file whose header names the pinned version and date but whose bytes
    are not Unicode's is refused (exit 1, naming both digests) by ``--check`` and by a write, and the vendored
    module is left as it was."""
    source = tmp_path / "confusables.txt"
    source.write_text(FIXTURE, encoding="utf-8")
    before = VENDORED.read_bytes()
    for argv in (["--check", str(source)], [str(source)]):
        result = subprocess.run([sys.executable, str(SCRIPT), *argv], cwd=ROOT, capture_output=True, text=True,
                                timeout=60)
        assert result.returncode == 1, result
        assert hashlib.sha256(source.read_bytes()).hexdigest() in result.stderr
        assert f"not the pinned {generator.PINNED.sha256}" in result.stderr
    assert VENDORED.read_bytes() == before


@pytest.mark.parametrize(("field", "value"), [("Version", "16.0.0"), ("Date", "2024-08-14, 23:15:04 GMT")])
def test_a_file_of_another_version_or_date_is_named_as_such(field: str, value: str, tmp_path: Path) -> None:
    """Another version's file is refused for its header, before its digest: the message says what to change. Its
    digest would be refused too: the pin made here is for the pinned file, not this one."""
    pinned = getattr(generator.PINNED, field.lower())
    source = FIXTURE.replace(f"# {field}: {pinned}\n", f"# {field}: {value}\n")
    assert source != FIXTURE
    data = source.encode("utf-8")
    with pytest.raises(generator.UnpinnedInput, match=f"header has {field}: {re.escape(value)}, .* pinned to "):
        generator.pinned_text(data, _pin_for(data))
    other = FIXTURE.encode("utf-8")
    assert generator.pinned_text(other, _pin_for(other)) == FIXTURE
    with pytest.raises(generator.UnpinnedInput, match="sha256"):
        generator.pinned_text(other.replace(b"0596", b"0597"), _pin_for(other))


def test_the_command_line_answers_two_for_a_wrong_call_and_one_for_a_missing_file(tmp_path: Path) -> None:
    assert generator.main([], generator.PINNED, tmp_path / "m.py") == 2
    assert generator.main(["--check", str(tmp_path / "absent.txt")], generator.PINNED, tmp_path / "m.py") == 1


def test_the_memory_tool_doc_names_the_pin() -> None:
    """docs/memory-tool.md, where the look-alike rule is described, names the pinned URL, version, date and sha256."""
    doc = " ".join((ROOT / "docs" / "memory-tool.md").read_text(encoding="utf-8").split())
    pin = generator.PINNED
    assert all(part in doc for part in (pin.url, f"Version: {pin.version}", f"Date: {pin.date}", pin.sha256))

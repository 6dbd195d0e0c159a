"""Path rules of the memory tool: strict, NFC, refused with the reference backend's texts."""

from __future__ import annotations

import unicodedata

import pytest

from memory_core.domain.errors import InvalidInput
from memory_core.domain.memory_paths import (
    MAX_PATH_CHARS,
    format_file_size,
    parse_new_path,
    parse_path,
)


@pytest.mark.parametrize("path", ["/memories", "/memories/", "/memories/a", "/memories/a/b.md", "/memories/a/"])
def test_paths_under_memories_are_accepted(path: str) -> None:
    assert parse_path(path).given == path


def test_trailing_slash_names_the_same_node() -> None:
    assert parse_path("/memories/a/").parts == parse_path("/memories/a").parts == ("a",)
    assert parse_path("/memories/").is_root


@pytest.mark.parametrize("path", ["/etc/passwd", "memories/a", "", "/Memories/a", " /memories/a"])
def test_paths_outside_memories_get_the_must_start_text(path: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_path(path)
    assert refused.value.message == f"Path must start with /memories, got: {path}"


@pytest.mark.parametrize("path", [
    "/memories/../etc", "/memories/a/../b", "/memories/./a", "/memories//a", "/memories/a//b",
    "/memoriesX/a", "/memories-old", "/memories/a\x00b", "/memories/a\nb", "/memories/a\x7fb", "/memories/a\x85b",
    "/memories/a\u2028b", "/memories/" + "x" * 256, "/memories/" + "/".join(["d"] * (MAX_PATH_CHARS // 2)),
])
def test_escapes_and_malformed_paths_get_the_escape_text(path: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_path(path)
    assert refused.value.message == f"Path {path} would escape /memories directory"
    assert refused.value.code == "invalid_path"


def test_paths_are_nfc_normalized() -> None:
    """A decomposed "é" and a composed one name the same file."""
    decomposed = "/memories/caf" + unicodedata.normalize("NFD", "é") + ".md"
    assert decomposed != "/memories/café.md"
    assert parse_path(decomposed).parts == parse_path("/memories/café.md").parts == ("café.md",)
    assert parse_path(decomposed).given == decomposed  # answers echo what the model sent


@pytest.mark.parametrize("mark", ["\u0307", "\u0301", "\u0323"])
@pytest.mark.parametrize("rest", ["", "/", "/notes.md"])
def test_a_combining_mark_after_memories_is_not_a_path_under_it(mark: str, rest: str) -> None:
    """NFC composes the mark with the last "s" of "/memories" ("/memorie\u1e61/notes.md"): the path names no node
    under /memories, and is not read as /memories/notes.md or as the root."""
    path = f"/memories{mark}{rest}"
    with pytest.raises(InvalidInput) as refused:
        parse_path(path)
    assert refused.value.message == f"Path {path} would escape /memories directory"


@pytest.mark.parametrize("invisible", [
    "\u200b", "\u200d", "\u200e", "\u202e", "\u2066", "\u2060", "\ufeff", "\u00ad", "\U000e0041",
    "\u034f", "\u115f", "\u1160", "\u3164", "\uffa0", "\u17b4", "\u2065", "\ufff0", "\U000e0200", "\u2800",
], ids=["zero-width-space", "zero-width-joiner", "left-to-right-mark", "right-to-left-override", "isolate",
        "word-joiner", "byte-order-mark", "soft-hyphen", "tag-letter-a", "combining-grapheme-joiner",
        "hangul-choseong-filler", "hangul-jungseong-filler", "hangul-filler", "halfwidth-hangul-filler",
        "khmer-inherent-vowel", "reserved-u2065", "reserved-ufff0", "reserved-plane-14", "braille-pattern-blank"])
def test_a_new_name_with_an_invisible_formatting_character_is_refused(invisible: str) -> None:
    """create and rename's destination refuse format characters (Cf) and the other default-ignorable characters,
    which draw nothing (a Hangul filler, the combining grapheme joiner), naming the code point; a name stored before
    the rule stays addressable, so it can be read, moved and deleted."""
    for path in (f"/memories/notes{invisible}.md", f"/memories/dir{invisible}/notes.md"):
        with pytest.raises(InvalidInput) as refused:
            parse_new_path(path)
        assert refused.value.code == "invalid_path"
        assert f"(U+{ord(invisible):04X})" in refused.value.message
        assert parse_path(path).given == path


@pytest.mark.parametrize("blank", [" ", "\u00a0", "\u2003", "\u3000", "\u202f", "\u1680"],
                         ids=["space", "no-break-space", "em-space", "ideographic-space",
                              "narrow-no-break-space", "ogham-space"])
@pytest.mark.parametrize("where", ["/memories/notes.md{}", "/memories/{}notes.md", "/memories/trip{}/notes.md",
                                   "/memories/{}trip/notes.md"])
def test_a_new_name_beginning_or_ending_with_a_blank_is_refused(blank: str, where: str) -> None:
    """"notes.md " and "notes.md\u00a0" list as "notes.md": a second file no one can tell from the first. A blank at
    either end of any segment is refused, naming its code point; a name stored before stays addressable."""
    path = where.format(blank)
    with pytest.raises(InvalidInput) as refused:
        parse_new_path(path)
    assert refused.value.code == "invalid_path"
    assert refused.value.message == (f"Path names cannot begin or end with a space or other blank character "
                                     f"(U+{ord(blank):04X}); name the file with visible characters only")
    assert parse_path(path).given == path


@pytest.mark.parametrize("blank", ["\u00a0", "\u2007", "\u202f", "\u3000", "\u2003", "\u2009", "\u205f", "\u1680"],
                         ids=["no-break-space", "figure-space", "narrow-no-break-space", "ideographic-space", "em-space",
                              "thin-space", "math-space", "ogham-space"])
@pytest.mark.parametrize("where", ["/memories/my{}notes.md", "/memories/trip{}plans/notes.md",
                                   "/memories/a/b/my notes{}2.md"])
def test_a_new_name_with_a_blank_other_than_the_ascii_space_inside_is_refused(blank: str, where: str) -> None:
    """"my\u00a0notes.md" lists as "my notes.md": a second file no one can tell from the first, as a blank at a
    segment's end was. Inside a name, the one blank is the ASCII space, as a whitespace-only file holds ASCII blanks
    only: any other Unicode white space is refused in a file's or a directory's name, naming its code point; a name
    stored before stays addressable."""
    path = where.format(blank)
    with pytest.raises(InvalidInput) as refused:
        parse_new_path(path)
    assert refused.value.code == "invalid_path"
    assert refused.value.message == (f"Path names cannot contain a blank character other than the ASCII space "
                                     f"(U+{ord(blank):04X}); name the file with visible characters and plain spaces "
                                     "only")
    assert parse_path(path).given == path


@pytest.mark.parametrize("name", ["my\u200bnotes.md", "my\u2800notes.md", "my\u3164notes.md", "my\ufeffnotes.md"],
                         ids=["zero-width-space", "braille-pattern-blank", "hangul-filler", "byte-order-mark"])
def test_a_character_drawn_as_nothing_inside_a_new_name_is_refused(name: str) -> None:
    """The blanks that draw nothing are refused inside a name too, not only as a whole name or at its ends."""
    with pytest.raises(InvalidInput, match=r"^Path names cannot contain invisible formatting characters \(U\+"):
        parse_new_path(f"/memories/{name}")


def test_the_ascii_space_between_words_names_new_files() -> None:
    assert parse_new_path("/memories/my trip/my  notes.md").parts == ("my trip", "my  notes.md")


@pytest.mark.parametrize("path", ["/memories/café ☕.md", "/memories/❤\ufe0f.md", "/memories/日本/東京.md",
                                  "/memories/a\u0301.md", "/memories/مرحبا.md", "/memories/한국어 메모.md",
                                  "/memories/ភាសាខ្មែរ.md", "/memories/\u1100\u1161\u11a8.md"])
def test_visible_names_in_any_script_are_new_names(path: str) -> None:
    """Emoji with a variation selector, combining marks, CJK, Hangul (syllables and conjoining jamo), Khmer and
    right-to-left scripts are visible, and accepted."""
    assert parse_new_path(path).parts == parse_path(path).parts


@pytest.mark.parametrize("name", [
    "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\U0001f3f3\ufe0f\u200d\U0001f308",
    "\U0001f469\U0001f3fd\u200d\U0001f4bb", "\u2764\ufe0f\u200d\U0001f525",
    "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f", "\u845b\U000e0100",
], ids=["family", "rainbow-flag", "technologist-skin-tone", "heart-on-fire", "flag-of-scotland", "ideographic-variant"])
def test_emoji_sequences_name_new_files(name: str) -> None:
    """The joiners of an emoji ZWJ sequence and a subdivision flag's tag characters are format characters, but an
    emoji needs them to be drawn: a name made of one is accepted, and so is an ideograph's registered variant."""
    assert parse_new_path(f"/memories/{name}.md").parts == (f"{name}.md",)


@pytest.mark.parametrize("name", [
    "notes\u200d.md", "\u200d\U0001f600.md", "\U0001f600\u200d.md", "\U0001f600\u200d\u200d\U0001f600.md",
    "notes\U000e0100.md", "\U0001f600\ufe0f\ufe0f.md", "\U0001f600\U000e0151\U000e015c.md",
    "\U000e0067\U000e0062\U000e007f.md",
], ids=["joiner-after-a-letter", "joiner-first", "joiner-last", "two-joiners", "selector-after-a-letter",
        "selector-run", "smuggled-bytes", "tags-without-a-flag"])
def test_joiners_and_selectors_no_emoji_needs_are_refused_in_new_names(name: str) -> None:
    """A joiner not between two pictographs, a variation selector that varies no character and tag characters
    outside a flag hide something in a name: refused, naming the first such character."""
    with pytest.raises(InvalidInput) as refused:
        parse_new_path(f"/memories/{name}")
    assert refused.value.message.startswith("Path names cannot contain invisible formatting characters (U+")


def test_segment_limit_counts_utf8_bytes() -> None:
    assert parse_path("/memories/" + "é" * 127).parts  # 254 bytes
    with pytest.raises(InvalidInput):
        parse_path("/memories/" + "é" * 128)  # 256 bytes


@pytest.mark.parametrize("size, shown", [(0, "0B"), (1, "1B"), (1023, "1023B"), (1024, "1K"), (1536, "1.5K"),
                                         (4096, "4K"), (1048576, "1M")])
def test_sizes_read_as_the_reference_shows_them(size: int, shown: str) -> None:
    assert format_file_size(size) == shown

"""Path rules of the memory tool: strict, NFC, refused with the reference backend's texts."""

from __future__ import annotations

import unicodedata

import pytest

from memory_core.domain.errors import InvalidInput
from memory_core.domain.memory_paths import MAX_PATH_CHARS, format_file_size, parse_new_path, parse_path


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


@pytest.mark.parametrize("invisible", [
    "\u200b", "\u200d", "\u200e", "\u202e", "\u2066", "\u2060", "\ufeff", "\u00ad", "\U000e0041",
], ids=["zero-width-space", "zero-width-joiner", "left-to-right-mark", "right-to-left-override", "isolate",
        "word-joiner", "byte-order-mark", "soft-hyphen", "tag-letter-a"])
def test_a_new_name_with_an_invisible_formatting_character_is_refused(invisible: str) -> None:
    """create and rename's destination refuse format characters (Cf), naming the code point; a name stored before
    the rule stays addressable, so it can be read, moved and deleted."""
    for path in (f"/memories/notes{invisible}.md", f"/memories/dir{invisible}/notes.md"):
        with pytest.raises(InvalidInput) as refused:
            parse_new_path(path)
        assert refused.value.code == "invalid_path"
        assert f"(U+{ord(invisible):04X})" in refused.value.message
        assert parse_path(path).given == path


@pytest.mark.parametrize("path", ["/memories/café ☕.md", "/memories/❤\ufe0f.md", "/memories/日本/東京.md",
                                  "/memories/a\u0301.md", "/memories/مرحبا.md"])
def test_visible_names_in_any_script_are_new_names(path: str) -> None:
    """Emoji with a variation selector, combining marks, CJK and right-to-left scripts are visible, and accepted."""
    assert parse_new_path(path).parts == parse_path(path).parts


def test_segment_limit_counts_utf8_bytes() -> None:
    assert parse_path("/memories/" + "é" * 127).parts  # 254 bytes
    with pytest.raises(InvalidInput):
        parse_path("/memories/" + "é" * 128)  # 256 bytes


@pytest.mark.parametrize("size, shown", [(0, "0B"), (1, "1B"), (1023, "1023B"), (1024, "1K"), (1536, "1.5K"),
                                         (4096, "4K"), (1048576, "1M")])
def test_sizes_read_as_the_reference_shows_them(size: int, shown: str) -> None:
    assert format_file_size(size) == shown

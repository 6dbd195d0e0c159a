"""Path rules of the memory tool: strict, NFC, refused with the reference backend's texts."""

from __future__ import annotations

import unicodedata

import pytest

from memory_core.domain.errors import InvalidInput
from memory_core.domain.memory_paths import MAX_PATH_CHARS, format_file_size, parse_path


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


def test_segment_limit_counts_utf8_bytes() -> None:
    assert parse_path("/memories/" + "é" * 127).parts  # 254 bytes
    with pytest.raises(InvalidInput):
        parse_path("/memories/" + "é" * 128)  # 256 bytes


@pytest.mark.parametrize("size, shown", [(0, "0B"), (1, "1B"), (1023, "1023B"), (1024, "1K"), (1536, "1.5K"),
                                         (4096, "4K"), (1048576, "1M")])
def test_sizes_read_as_the_reference_shows_them(size: int, shown: str) -> None:
    assert format_file_size(size) == shown

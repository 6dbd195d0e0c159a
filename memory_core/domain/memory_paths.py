"""Paths under /memories and the exact texts of Claude's memory tool (``memory_20250818``).

The texts are those of the anthropic SDK's reference backend
(``anthropic/lib/tools/_beta_builtin_memory_tool.py``,
``BetaLocalFilesystemMemoryTool``): models are trained on them, so they are
reproduced character for character. Only custody adds words of its own
(``pending_note``, ``deleted_pending``).

Path rules are stricter than the reference's: under ``/memories``; no ``..``,
``.`` or empty segments (one trailing ``/`` is allowed, as for a directory);
no control characters; NFC-normalized; at most ``MAX_PATH_CHARS`` characters
and ``MAX_SEGMENT_BYTES`` UTF-8 bytes per segment. A rejected path gets the
reference's own refusal text. A name brought into being (``parse_new_path``: create,
rename's destination) also has no invisible formatting character or other
default-ignorable character, no blank that draws nothing (U+2800), no space or other blank at either end
of a segment, and no blank but the ASCII space inside one, which the reference has no text for; nor may it be a
look-alike of a name beside it (``lookalike_names.lookalike_of``): one that differs from it only in case or in
characters that look alike ("Notes.md", "\ufb01le.md", "\uff46ile.md", "n\u043etes.md" beside "notes.md", "file.md").
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from memory_core.domain.errors import Conflict, InvalidInput, NotFound
from memory_core.domain.hidden_text import DRAWN_AS_NOTHING, hidden_character, is_tag_character
from memory_core.domain.lookalike_names import lookalike_of

ROOT = "/memories"
MAX_PATH_CHARS = 1024
MAX_SEGMENT_BYTES = 255
MAX_LINES = 999999
LINE_NUMBER_WIDTH = len(str(MAX_LINES))
# What the reference shows for a directory: the st_size of a directory on ext4 (4096 bytes).
DIRECTORY_SIZE = "4K"
# Unicode categories refused in a path: controls (C0, DEL, C1), surrogates, line/paragraph separators.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})
# Refused in a new name: format characters (Cf). Zero-width ones make "a\u200b.md" a second file that reads
# as "a.md"; bidi overrides (U+202E) show a name reversed in listings and the console; tag characters
# (U+E0000 block) and stray variation selectors carry text no one sees (``hidden_text``). What emoji need is
# kept: a joiner between two pictographs (a family, a rainbow flag) and a subdivision flag's tag characters.
# Names stored before this rule can still be read, moved and deleted.
_INVISIBLE_CATEGORY = "Cf"
# Refused too: the default-ignorable characters that are not Cf (Unicode's DerivedCoreProperties), which draw
# nothing though they are letters or marks: the combining grapheme joiner, the Hangul fillers, the Khmer inherent
# vowels, and the code points reserved as default-ignorable (U+2065, U+FFF0-U+FFF8, the rest of the U+E0000
# plane). "notes\u3164.md" reads as "notes.md". The variation selectors among them are ``hidden_character``'s.
# The braille pattern blank U+2800 is no default-ignorable character, but it draws as nothing all the same (a symbol,
# So): "notes.md\u2800" lists as "notes.md".
_INVISIBLE_LETTERS_AND_MARKS = DRAWN_AS_NOTHING | frozenset(
    "\u2065\u2800" + "".join(map(chr, range(0xFFF0, 0xFFF9))))
_IGNORABLE_PLANE = (0xE0000, 0xE0FFF)
_JOINER = "\u200d"
_SPACE = " "
_PICTOGRAPH_CATEGORY = "So"
# What may stand between a pictograph and the joiner after it: emoji presentation and the skin tones.
_EMOJI_PRESENTATION = "\ufe0f"
_SKIN_TONES = ("\U0001f3fb", "\U0001f3ff")


@dataclass(frozen=True, slots=True)
class MemoryPath:
    """A validated path: ``given`` as the model sent it (echoed in answers), ``parts`` NFC segments below /memories."""

    given: str
    parts: tuple[str, ...]

    @property
    def is_root(self) -> bool:
        return not self.parts

    @property
    def rel(self) -> str:
        """The path below /memories, "" for the root."""
        return "/".join(self.parts)


def parse_path(path: str) -> MemoryPath:
    """Validate ``path``; ``InvalidInput`` with the reference's text when it is refused."""
    if not path.startswith(ROOT):
        raise InvalidInput(f"Path must start with /memories, got: {path}", code="invalid_path")
    normalized = unicodedata.normalize("NFC", path)
    rest = normalized[len(ROOT):]
    rest = rest.removesuffix("/")
    parts = tuple(rest.split("/")[1:]) if rest else ()
    if (
        # A combining mark right after "/memories" composes with its "s" ("/memories\u0307/x" is "/memorie\u1e61/x"):
        # the path is not under /memories, though its first nine characters were.
        not normalized.startswith(ROOT)
        or (rest and not rest.startswith("/"))
        or len(normalized) > MAX_PATH_CHARS
        or any(part in ("", ".", "..") for part in parts)
        or any(len(part.encode("utf-8")) > MAX_SEGMENT_BYTES for part in parts)
        or any(unicodedata.category(ch) in _REFUSED_CATEGORIES for ch in normalized)
    ):
        raise InvalidInput(f"Path {path} would escape /memories directory", code="invalid_path")
    return MemoryPath(path, parts)


def parse_new_path(path: str) -> MemoryPath:
    """``parse_path`` for a name the command brings into being; ``InvalidInput`` also for a format character or a
    blank at a segment's end, named by its code point (the text does not repeat the path, which would not show it)."""
    target = parse_path(path)
    invisible = _invisible(target.rel)
    if invisible is not None:
        raise InvalidInput(
            f"Path names cannot contain invisible formatting characters (U+{ord(invisible):04X}); "
            "name the file with visible characters only",
            code="invalid_path",
        )
    # A blank at either end of a segment is seen by no one: "notes.md " or "notes.md\u00a0" lists as "notes.md".
    # Blanks inside a name ("my notes.md") are seen, between the words.
    blank = next((end for part in target.parts for end in (part[0], part[-1]) if end.isspace()), None)
    if blank is not None:
        raise InvalidInput(
            f"Path names cannot begin or end with a space or other blank character (U+{ord(blank):04X}); "
            "name the file with visible characters only",
            code="invalid_path",
        )
    # Between words, the one blank is the ASCII space: "my\u00a0notes.md" or "my\u3000notes.md" lists as "my notes.md",
    # a second file no one can tell from it. The blanks are those refused at the ends (Unicode white space); a
    # whitespace-only file likewise holds ASCII blanks only.
    blank = next((c for c in target.rel if c.isspace() and c != _SPACE), None)
    if blank is not None:
        raise InvalidInput(
            f"Path names cannot contain a blank character other than the ASCII space (U+{ord(blank):04X}); "
            "name the file with visible characters and plain spaces only",
            code="invalid_path",
        )
    return target


def refuse_lookalike(target: MemoryPath, exists: Callable[[str], bool], names_in: Callable[[str], Iterable[str]],
                     reserved: Collection[str], moving: str | None = None) -> None:
    """``InvalidInput`` (``lookalike_path``) when the first name ``target`` brings into being (a file's, or a
    directory's on its way: the first of its paths that ``exists`` denies) is a look-alike (``lookalike_of``) of a name
    beside it: "Notes.md" or "\uff4eotes.md" beside "notes.md", "Trip/plan.md" beside the directory "trip". Below that
    name everything is new, so one directory is compared, the one it would be made in (``names_in``: the names in a
    directory). The ``reserved`` paths, the service's own directories, stand beside it whether shown or not
    ("Appended/x.md"). ``moving``: a rename's source, which goes away ("notes.md" renamed "Notes.md" leaves no twin)."""
    for depth, name in enumerate(target.parts):
        if exists("/".join(target.parts[:depth + 1])):
            continue
        parent = "/".join(target.parts[:depth])
        prefix = parent + "/" if parent else ""
        beside = dict.fromkeys(names_in(parent))
        if moving is not None and moving.startswith(prefix):
            beside.pop(moving[len(prefix):], None)
        beside.update(dict.fromkeys(r.removeprefix(prefix) for r in reserved if r.rpartition("/")[0] == parent))
        twin = lookalike_of(name, beside)
        if twin is not None:
            raise lookalike_path(target.given, f"{ROOT}/{prefix}{twin}")
        return


def _invisible(name: str) -> str | None:
    """The first character of ``name`` no one sees that no emoji needs, or None."""
    for at, character in enumerate(name):
        if character in _INVISIBLE_LETTERS_AND_MARKS:
            return character
        if (unicodedata.category(character) == _INVISIBLE_CATEGORY and not is_tag_character(character)
                and not _joins_pictographs(name, at)):
            return character
    hidden = hidden_character(name)
    if hidden is not None:
        return hidden
    # What the Tags block and the ideographic selectors leave of that plane: unassigned, and drawn as nothing.
    return next((c for c in name if _IGNORABLE_PLANE[0] <= ord(c) <= _IGNORABLE_PLANE[1]
                 and unicodedata.category(c) == "Cn"), None)


def _joins_pictographs(name: str, at: int) -> bool:
    """Whether ``name[at]`` is a zero-width joiner between two pictographs, as in an emoji ZWJ sequence."""
    if name[at] != _JOINER or not 0 < at < len(name) - 1:
        return False
    before = at - 1
    if name[before] == _EMOJI_PRESENTATION or _SKIN_TONES[0] <= name[before] <= _SKIN_TONES[1]:
        before -= 1
    return (before >= 0 and unicodedata.category(name[before]) == _PICTOGRAPH_CATEGORY
            and unicodedata.category(name[at + 1]) == _PICTOGRAPH_CATEGORY)


# -- the reference's texts ---------------------------------------------------------


def created(path: str) -> str:
    return f"File created successfully at: {path}"


def deleted(path: str) -> str:
    return f"Successfully deleted {path}"


def renamed(old: str, new: str) -> str:
    return f"Successfully renamed {old} to {new}"


def inserted(path: str) -> str:
    return f"The file {path} has been edited."


def not_found(path: str) -> NotFound:
    """view, str_replace and insert on a missing path."""
    return NotFound(f"The path {path} does not exist. Please provide a valid path.", code="path_not_found")


def not_found_short(path: str) -> NotFound:
    """delete and rename of a missing path (the reference's shorter text)."""
    return NotFound(f"The path {path} does not exist", code="path_not_found")


def not_a_file(path: str) -> InvalidInput:
    return InvalidInput(f"The path {path} is not a file.", code="not_a_file")


def already_exists(path: str) -> Conflict:
    return Conflict(f"File {path} already exists", code="already_exists")


def destination_exists(path: str) -> Conflict:
    return Conflict(f"The destination {path} already exists", code="already_exists")


def root_undeletable() -> InvalidInput:
    return InvalidInput("Cannot delete the /memories directory itself", code="root_refused")


def root_unrenamable() -> InvalidInput:
    return InvalidInput("Cannot rename the /memories directory itself", code="root_refused")


def no_match(old_str: str, path: str) -> InvalidInput:
    return InvalidInput(
        f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}.", code="no_match"
    )


def not_unique(old_str: str, lines: Sequence[int], path: str) -> InvalidInput:
    del path  # the reference does not name the file here
    return InvalidInput(
        f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines: "
        f"{', '.join(map(str, lines))}. Please ensure it is unique",
        code="not_unique",
    )


def insert_out_of_range(insert_line: int, line_count: int) -> InvalidInput:
    return InvalidInput(
        f"Invalid `insert_line` parameter: {insert_line}. It should be within the range [0, {line_count}].",
        code="invalid_insert_line",
    )


def too_many_lines(path: str) -> InvalidInput:
    return InvalidInput(f"File {path} exceeds maximum line limit of 999,999 lines.", code="too_many_lines")


# -- texts of memory-core's own (no reference equivalent) -----------------------------


def parent_not_directory(path: str) -> InvalidInput:
    """Writing below a file (the reference fails with an operating-system error here)."""
    return InvalidInput(f"The path {path} cannot be created: a parent of it is a file.", code="parent_is_file")


def move_into_itself(old: str, new: str) -> InvalidInput:
    """Renaming a directory into itself (the reference fails with an operating-system error here)."""
    return InvalidInput(f"Cannot move {old} into itself ({new}).", code="move_into_itself")


def reserved_path(path: str, holds: str) -> InvalidInput:
    """A file or directory made at a name the service's own directories hold: the namespace would have two nodes at
    one path, and the one that shows would hide the other (``holds``: what that directory holds)."""
    return InvalidInput(
        f"The path {path} is reserved: it is the directory of {holds}. Please provide a different path.",
        code="reserved_path",
    )


def lookalike_path(path: str, existing: str) -> InvalidInput:
    """A name brought into being beside a look-alike (``lookalike_of``): ``existing`` is the full path of that one (or
    of the service's directory it would be taken for, shown or not)."""
    return InvalidInput(
        f"The path {path} cannot be created: it would stand beside {existing}, whose name differs from it only in "
        f"case or in characters that look alike. Please use {existing}, or provide a different name.",
        code="lookalike_path",
    )


def agent_required(path: str) -> InvalidInput:
    return InvalidInput(
        f"The path {path} holds the calling agent's own memory, and this call names no agent.",
        code="agent_required",
    )


def pending_note(request_ids: Sequence[str]) -> str:
    """Added to an edit's answer when the text it replaced awaits an operator's approval to be erased."""
    return (
        "\n\nNote: the replaced content is hidden from memory now; its deletion is pending operator approval "
        f"(request {', '.join(request_ids)})."
    )


def deleted_pending(path: str, request_ids: Sequence[str]) -> str:
    """The answer to a delete whose content awaits an operator's approval to be erased."""
    return (
        f"Deleted {path} from memory: it is hidden now, and the deletion is pending operator approval "
        f"(request {', '.join(request_ids)}). Until an operator approves, the content is kept but not shown."
    )


# -- the view format ---------------------------------------------------------------


def format_file_size(byte_count: int) -> str:
    """The reference's human-readable size: 0B, 512B, 1.5K, 2M."""
    if byte_count == 0:
        return "0B"
    sizes = ["B", "K", "M", "G"]
    i = min((byte_count.bit_length() - 1) // 10, len(sizes) - 1)
    size = byte_count / (1024**i)
    return f"{int(size)}{sizes[i]}" if size == int(size) else f"{size:.1f}{sizes[i]}"


def numbered(lines: Sequence[str], first: int) -> str:
    return "\n".join(f"{str(i + first).rjust(LINE_NUMBER_WIDTH)}\t{line}" for i, line in enumerate(lines))


def file_view(path: str, content: str, view_range: Sequence[int] | None) -> str:
    """A file with line numbers, optionally a ``[start, end]`` range (end -1: to the last line)."""
    lines = content.split("\n")
    if len(lines) > MAX_LINES:
        raise too_many_lines(path)
    shown, first = lines, 1
    if view_range and len(view_range) == 2:
        start = max(1, view_range[0]) - 1
        end = len(lines) if view_range[1] == -1 else view_range[1]
        shown, first = lines[start:end], start + 1
    return f"Here's the content of {path} with line numbers:\n" + numbered(shown, first)


def directory_view(path: str, items: Sequence[tuple[str, str]]) -> str:
    """A directory listing: ``items`` are (size, relative path) pairs in listing order."""
    header = f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:"
    lines = [f"{DIRECTORY_SIZE}\t{path}", *(directory_line(path, size, rel) for size, rel in items)]
    return f"{header}\n" + "\n".join(lines)


def directory_line(path: str, size: str, rel: str) -> str:
    """One item's line in ``path``'s listing."""
    return f"{size}\t{path}/{rel}"


def listing_cut(limit: int, left: int) -> str:
    """The line ending a directory listing cut at ``limit`` characters, ``left`` items not listed."""
    return (f"\n({left:,} more files and directories are not listed: a listing stops at {limit:,} characters. Entries "
            "written outside the memory tool are the files under appended/ and agent/appended/; view one of those "
            "directories, or a file by its path.)")


def edit_snippet(new_content: str, changed_line_index: int) -> str:
    """str_replace's answer: the changed line with two lines of context on each side."""
    new_lines = new_content.split("\n")
    start = max(0, changed_line_index - 2)
    end = min(len(new_lines), changed_line_index + 3)
    snippet = [f"{str(n).rjust(LINE_NUMBER_WIDTH)}\t{new_lines[n - 1]}" for n in range(start + 1, end + 1)]
    return "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n" + "\n".join(
        snippet
    )

"""The scripted command sequence of the differential tests, and the differences custody makes.

Every command goes, in this order, to the SDK's ``BetaLocalFilesystemMemoryTool``
on a temporary folder and to memory-core; the answers are compared text for text.
"""

from __future__ import annotations

from typing import Any

Command = dict[str, Any]

NOTES = "# Preferences\nlikes tea\nprefers short answers\nlikes tea\n"

SCRIPT: list[Command] = [
    # an empty memory, and a view of a missing path
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/memories/nothing.md"},
    # nested directories
    {"command": "create", "path": "/memories/notes.md", "file_text": NOTES},
    {"command": "create", "path": "/memories/projects/alpha/plan.md", "file_text": "step one\nstep two\nstep three"},
    {"command": "create", "path": "/memories/projects/alpha/deep/deeper/leaf.md", "file_text": "leaf"},
    {"command": "create", "path": "/memories/projects/beta.md", "file_text": ""},
    {"command": "create", "path": "/memories/.hidden.md", "file_text": "not listed"},
    {"command": "create", "path": "/memories/notes.md", "file_text": "again"},
    {"command": "create", "path": "/memories/projects", "file_text": "a directory"},
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/memories/"},
    {"command": "view", "path": "/memories/projects"},
    {"command": "view", "path": "/memories/projects/alpha/deep"},
    # views with view_range
    {"command": "view", "path": "/memories/notes.md"},
    {"command": "view", "path": "/memories/notes.md", "view_range": [2, 3]},
    {"command": "view", "path": "/memories/notes.md", "view_range": [3, -1]},
    {"command": "view", "path": "/memories/notes.md", "view_range": [0, 1]},
    {"command": "view", "path": "/memories/notes.md", "view_range": [4, 99]},
    {"command": "view", "path": "/memories/projects/beta.md"},
    # replacements: unique, missing, repeated, on a directory, on a missing file
    {"command": "str_replace", "path": "/memories/notes.md", "old_str": "prefers short answers",
     "new_str": "prefers short answers, with examples"},
    {"command": "str_replace", "path": "/memories/notes.md", "old_str": "likes coffee", "new_str": "x"},
    {"command": "str_replace", "path": "/memories/notes.md", "old_str": "likes tea", "new_str": "likes green tea"},
    # repeated on many lines, and the empty string, repeated at every character
    {"command": "str_replace", "path": "/memories/notes.md", "old_str": "e", "new_str": "E"},
    {"command": "str_replace", "path": "/memories/notes.md", "old_str": "", "new_str": "x"},
    {"command": "str_replace", "path": "/memories/projects", "old_str": "a", "new_str": "b"},
    {"command": "str_replace", "path": "/memories/missing.md", "old_str": "a", "new_str": "b"},
    {"command": "str_replace", "path": "/memories/projects/alpha/plan.md", "old_str": "step two",
     "new_str": "step 2", "_pending": "replace"},
    {"command": "view", "path": "/memories/projects/alpha/plan.md"},
    # inserts at 0, in the middle, at the end, out of range
    {"command": "insert", "path": "/memories/projects/alpha/plan.md", "insert_line": 0, "insert_text": "# Plan\n"},
    {"command": "insert", "path": "/memories/projects/alpha/plan.md", "insert_line": 2, "insert_text": "middle"},
    {"command": "insert", "path": "/memories/projects/alpha/plan.md", "insert_line": 5, "insert_text": "the end"},
    {"command": "insert", "path": "/memories/projects/alpha/plan.md", "insert_line": 7, "insert_text": "too far"},
    {"command": "insert", "path": "/memories/projects/alpha/plan.md", "insert_line": -1, "insert_text": "negative"},
    {"command": "insert", "path": "/memories/projects/beta.md", "insert_line": 0, "insert_text": "first line"},
    {"command": "insert", "path": "/memories/projects", "insert_line": 0, "insert_text": "x"},
    {"command": "view", "path": "/memories/projects/alpha/plan.md"},
    {"command": "view", "path": "/memories/projects/beta.md"},
    # renames: onto an existing file, of a missing path, of a file, of a directory, of the root
    {"command": "create", "path": "/memories/other.md", "file_text": "other\n"},
    {"command": "rename", "old_path": "/memories/other.md", "new_path": "/memories/notes.md"},
    {"command": "rename", "old_path": "/memories/ghost.md", "new_path": "/memories/ghost2.md"},
    # The reference makes the destination's folder before it finds the source missing; so does memory-core.
    {"command": "rename", "old_path": "/memories/ghost.md", "new_path": "/memories/made/ghost.md"},
    # The reference fails here with an operating-system error (NotADirectoryError); memory-core says why.
    {"command": "create", "path": "/memories/notes.md/below.md", "file_text": "under a file",
     "_strict": "The path /memories/notes.md/below.md cannot be created: a parent of it is a file."},
    {"command": "rename", "old_path": "/memories/other.md", "new_path": "/memories/archive/other.md"},
    {"command": "rename", "old_path": "/memories/projects/alpha", "new_path": "/memories/archive/alpha"},
    {"command": "rename", "old_path": "/memories", "new_path": "/memories/x"},
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/memories/archive/alpha/plan.md", "view_range": [1, 2]},
    # path escapes and malformed paths
    {"command": "view", "path": "/etc/passwd"},
    {"command": "view", "path": "/memories/../etc/passwd"},
    {"command": "create", "path": "/memories/../../escape.md", "file_text": "x"},
    {"command": "create", "path": "memories/relative.md", "file_text": "x"},
    # The reference resolves ".." that stays inside; memory-core's strict rules refuse every "..".
    {"command": "delete", "path": "/memories/../memories", "_strict": "Path /memories/../memories would escape /memories directory"},
    {"command": "rename", "old_path": "/memories/notes.md", "new_path": "/tmp/notes.md"},
    # deletes: a file, a directory, something missing, the root
    {"command": "delete", "path": "/memories/projects/beta.md", "_pending": "delete"},
    {"command": "view", "path": "/memories/projects"},
    {"command": "delete", "path": "/memories/archive", "_pending": "delete"},
    {"command": "delete", "path": "/memories/archive"},
    {"command": "delete", "path": "/memories"},
    {"command": "delete", "path": "/memories/"},
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/memories/notes.md"},
]


# Commands marked "_pending" remove stored text. Under MEMORY_DELETION_MODE=operator_approval
# memory-core answers them differently from the reference, by design: the old text is hidden at
# once and the answer says its deletion awaits an operator. Those are the only differences.
PENDING_REPLACE = "replace"
PENDING_DELETE = "delete"


def sendable(command: Command) -> Command:
    """The command without the test's own markers."""
    return {k: v for k, v in command.items() if not k.startswith("_")}


Answer = tuple[bool, str]


def reference_answers(folder: str) -> list[Answer]:
    """The SDK's BetaLocalFilesystemMemoryTool's answers to SCRIPT, on a folder of its own."""
    # The reference backend is not exported from anthropic.lib.tools; it lives in this private module.
    from anthropic.lib.tools import ToolError
    from anthropic.lib.tools._beta_builtin_memory_tool import (
        BetaLocalFilesystemMemoryTool,
    )

    tool = BetaLocalFilesystemMemoryTool(folder)
    answers: list[Answer] = []
    for command in SCRIPT:
        try:
            answers.append((False, str(tool.call(sendable(command)))))
        except ToolError as error:
            answers.append((True, str(error.content)))
        except OSError as error:  # the tool runner would send the model repr(error)
            answers.append((True, repr(error)))
    return answers


def mismatches(reference: list[Answer], ours: list[Answer], *, approval: bool) -> list[str]:
    """Every answer of ours that is neither the reference's text nor a named custody difference."""
    problems: list[str] = []
    for index, (command, ref, got) in enumerate(zip(SCRIPT, reference, ours, strict=True)):
        if "_strict" in command:  # strict paths, and where the reference fails with an OS error
            expected_ok = got == (True, command["_strict"])
        elif approval and command.get("_pending") == PENDING_REPLACE:
            expected_ok = (not ref[0] and not got[0] and got[1].startswith(ref[1] + "\n\nNote: ")
                           and "its deletion is pending operator approval" in got[1])
        elif approval and command.get("_pending") == PENDING_DELETE:
            expected_ok = (not ref[0] and not got[0] and got[1].startswith(f"Deleted {command['path']} from memory")
                           and "the deletion is pending operator approval" in got[1])
        else:
            expected_ok = got == ref
        if not expected_ok:
            problems.append(f"#{index} {sendable(command)}\n  reference: {ref!r}\n  memory-core: {got!r}")
    return problems

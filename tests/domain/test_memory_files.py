"""The memory tool's commands over a namespace, where the reference backend's answers are not the whole story.

Answers are compared with the reference text for text in tests/memory_tool/test_differential.py; here, what the
reference does not promise: how their cost grows.
"""

from __future__ import annotations

import time

import pytest

from memory_core.domain.errors import InvalidInput
from memory_core.domain.memory_files import FileNode, Namespace, str_replace


def test_a_repeated_old_str_is_answered_in_time_linear_in_the_file() -> None:
    """Every occurrence's line is listed, as the reference lists them, in one pass: old_str "" in 512 KiB (every
    character an occurrence) took about 35 s when each line was counted from the start of the file."""
    content = "ab\n" * (512 * 1024 // 3)
    namespace = Namespace({"big.md": FileNode(content)})
    started = time.perf_counter()
    with pytest.raises(InvalidInput) as raised:
        str_replace(namespace, "/memories/big.md", "", "x")
    elapsed = time.perf_counter() - started
    listed = str(raised.value).split("in lines: ")[1].split(". Please")[0].split(", ")
    assert len(listed) == len(content) + 1
    assert listed[:7] == ["1", "1", "1", "2", "2", "2", "3"] and listed[-1] == str(content.count("\n") + 1)
    assert elapsed < 2.0, f"{elapsed:.2f} s"

"""Look-alike names through the anthropic SDK's tool interface (``MemoryCoreMemoryTool`` over real HTTP to
``python -m memory_core serve``), on SQLite and Cosmos DB: the model is told why a twin name is refused and which file
it would be taken for; a decomposed path reaches the composed file; names a reader tells apart are names.

The reference backend on a case-sensitive disk makes every one of these twins; its answers are not compared here
(tests/memory_tool/test_differential.py compares the rest)."""

from __future__ import annotations

import unicodedata

import pytest

from memory_core.integrations.anthropic import MemoryCoreMemoryTool
from tests.support.local_server import USER_KEY, RunningServer

UPN = "twins@contoso.com"


def _refusal(tool: MemoryCoreMemoryTool, **command: object) -> str:
    from anthropic.lib.tools import ToolError

    with pytest.raises(ToolError) as refused:
        tool.call(command)  # type: ignore[arg-type]
    return str(refused.value.content)


def test_twin_names_are_refused_and_a_decomposed_path_finds_the_composed_file(
        mode_server: tuple[RunningServer, bool], instance_id: str) -> None:
    server, _ = mode_server
    tool = MemoryCoreMemoryTool(server.api, instance_id, api_key=USER_KEY, user_identity={"upn": UPN})
    cafe = unicodedata.normalize("NFC", "café.md")
    for path in ("/memories/file.md", "/memories/notes.md", f"/memories/{cafe}", "/memories/other.md"):
        assert str(tool.call({"command": "create", "path": path, "file_text": f"text of {path}\n"})).startswith(
            "File created successfully")

    for twin, first in (("\ufb01le.md", "file.md"), ("\uff46ile.md", "file.md"), ("Notes.md", "notes.md"),
                        (unicodedata.normalize("NFD", "Café.md"), cafe), ("n\u043etes.md", "notes.md"),
                        ("N\u03bftes.md", "notes.md"), ("\u0192ile.md", "file.md")):
        expected = (f"The path /memories/{twin} cannot be created: it would stand beside /memories/{first}, whose name "
                    "differs from it only in case or in characters that look alike. Please use "
                    f"/memories/{first}, or provide a different name.")
        assert _refusal(tool, command="create", path=f"/memories/{twin}", file_text="twin") == expected
        assert _refusal(tool, command="rename", old_path="/memories/other.md",
                        new_path=f"/memories/{twin}") == expected

    decomposed = "/memories/" + unicodedata.normalize("NFD", cafe)
    assert f"text of /memories/{cafe}" in str(tool.call({"command": "view", "path": decomposed}))
    assert _refusal(tool, command="create", path=decomposed, file_text="twin") == f"File {decomposed} already exists"
    for distinct in ("files.md", "x2.md", "x\u00b2.md"):
        assert str(tool.call({"command": "create", "path": f"/memories/{distinct}", "file_text": "distinct"})
                   ).startswith("File created successfully")
    listing = str(tool.call({"command": "view", "path": "/memories"}))
    tool.close()
    assert sorted(line.split("/memories/")[1] for line in listing.split("\n")[2:]) == sorted(
        ["file.md", "files.md", "notes.md", cafe, "other.md", "x2.md", "x\u00b2.md"])

    # The REST route answers the refusal as every refused path: 400, with its own code.
    with server.client(UPN) as http:
        answer = http.post(f"/instances/{instance_id}/memory/files/create",
                           json={"command": "create", "path": "/memories/NOTES.md", "file_text": "x"})
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "lookalike_path"

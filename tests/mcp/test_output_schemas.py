"""Compact output schemas accept exactly what pydantic's schemas accept, and are cheaper to check.

The equivalence is checked the way a client checks: jsonschema's Draft 2020-12 validator
(with its format checker) on real answers of the tools and on every one-field mutation of
them (each value replaced by values of other types, by null, or removed).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated, Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.validators import validator_for
from mcp_types import CallToolResult

from memory_core.mcp.output_schemas import compact
from memory_core.mcp.server import compact_output_schemas, new_server
from memory_core.mcp.tool_results import json_result
from memory_core.wire.budget import BudgetModel, ScopeBudgetModel
from memory_core.wire.custody import AgentRef, Author, EntryModel, SearchHitModel, SearchResponse
from memory_core.wire.memory import MemoryResponse

WHEN = datetime(2026, 12, 3, 5, 0, tzinfo=UTC)
REPLACEMENTS: list[Any] = [None, 0, -1, 1.5, True, "", "user", "2026-12-03T05:00:00Z", "not a date", [], [1], {}]


def _memory_answers() -> list[dict[str, Any]]:
    appended = MemoryResponse(scope="user", upn="alex@contoso.com", user_name="Alex", name="Alex",
                              agent_object_id=None, agent_name=None, content_markdown="## Appended\n\n- tea\n",
                              created_on=WHEN, updated_on=WHEN, entry_id="e1")
    budget = BudgetModel(max_chars=100, chars=90, shown_entries=1, omitted_entries=2, omitted_from=WHEN,
                         omitted_to=WHEN, scopes=[ScopeBudgetModel(scope="user", shown_entries=1, omitted_entries=2,
                                                                   omitted_from=WHEN, omitted_to=None,
                                                                   cut_entry_id="e2")])
    read = appended.model_copy(update={"entry_id": None, "budget": budget, "notice": "left out", "memory_mode": "off",
                                       "agent_object_id": "a1", "agent_name": "Helper"})
    return [appended.model_dump(mode="json"), read.model_dump(mode="json")]


def _search_answers(entry: dict[str, Any]) -> list[dict[str, Any]]:
    hit = SearchHitModel(score=1.25, entry=EntryModel.model_validate(entry))
    return [SearchResponse(query="tea", hits=[hit, hit], notice=None).model_dump(mode="json"),
            SearchResponse(query="tea", hits=[], notice="memory is off").model_dump(mode="json")]


def _entry_sample() -> dict[str, Any]:
    entry = EntryModel(id="e1", scope="agent", kind="append", content_markdown="- tea", created_on=WHEN,
                       author=Author(upn="alex@contoso.com", user_id=None), agent=AgentRef(object_id="a1", name=None),
                       session_id="s1", reason=None, tags=["mem_type:user-profile"], share="private",
                       content_sha256="ab" * 32)
    return entry.model_dump(mode="json")


def _mutations(value: Any) -> Iterator[Any]:
    """``value`` with one field (at any depth) replaced by each of REPLACEMENTS, or removed."""
    if isinstance(value, dict):
        for key in value:
            for replacement in [*REPLACEMENTS, "__removed__"]:
                changed = copy.deepcopy(value)
                if replacement == "__removed__":
                    del changed[key]
                else:
                    changed[key] = replacement
                yield changed
            for inner in _mutations(value[key]):
                changed = copy.deepcopy(value)
                changed[key] = inner
                yield changed
    elif isinstance(value, list) and value:
        for inner in _mutations(value[0]):
            yield [inner, *copy.deepcopy(value[1:])]


def _validator(schema: dict[str, Any]) -> Any:
    return validator_for(schema)(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


CASES = [
    pytest.param(MemoryResponse, _memory_answers(), id="MemoryResponse (append_memory)"),
    pytest.param(SearchResponse, _search_answers(_entry_sample()), id="SearchResponse (search_memory)"),
]


@pytest.mark.parametrize(("model", "answers"), CASES)
def test_a_compact_schema_accepts_and_refuses_exactly_what_pydantics_schema_does(
    model: type[Any], answers: list[dict[str, Any]]
) -> None:
    original = model.model_json_schema()
    before, after = _validator(original), _validator(compact(original))
    checked = refused = 0
    for answer in answers:
        assert before.is_valid(answer) and after.is_valid(answer)
        for mutated in _mutations(answer):
            assert after.is_valid(mutated) == before.is_valid(mutated), mutated
            checked += 1
            refused += not before.is_valid(mutated)
    assert checked > 200 and refused > 100  # the mutations really probe the schema


@pytest.mark.parametrize(("model", "answers"), CASES)
def test_a_compact_schema_has_no_refs_no_nullable_unions_and_no_titles(model: type[Any], answers: object) -> None:
    text = str(compact(model.model_json_schema()))
    assert "$ref" not in text and "$defs" not in text and "'title'" not in text
    assert "{'type': 'null'}" not in text


def test_a_nullable_enum_takes_null_into_its_values() -> None:
    schema = {"anyOf": [{"enum": ["on", "off"], "type": "string"}, {"type": "null"}], "default": None}
    assert compact(schema) == {"enum": ["on", "off", None], "type": ["string", "null"], "default": None}


def test_a_union_that_constrains_more_than_the_type_is_left_as_it_is() -> None:
    beside_a_type = {"type": "string", "anyOf": [{"type": "string", "minLength": 2}, {"type": "null"}]}
    with_a_const = {"anyOf": [{"type": "string", "const": "x"}, {"type": "null"}]}
    three_ways = {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}
    for schema in (beside_a_type, with_a_const, three_ways):
        assert compact(schema) == schema


def test_a_recursive_definition_keeps_its_reference() -> None:
    schema = {
        "$defs": {"Node": {"title": "Node", "type": "object",
                           "properties": {"child": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}}}},
        "$ref": "#/$defs/Node",
    }
    out = compact(schema)
    assert out["$defs"]["Node"]["properties"]["child"] == {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}
    valid, invalid = {"child": {"child": None}}, {"child": {"child": 3}}
    assert _validator(out).is_valid(valid) and not _validator(out).is_valid(invalid)


def test_a_property_named_title_is_kept() -> None:
    schema = {"type": "object", "title": "Doc", "properties": {"title": {"type": "string", "title": "Title"}}}
    assert compact(schema) == {"type": "object", "properties": {"title": {"type": "string"}}}


def test_compact_does_not_change_its_argument() -> None:
    schema = MemoryResponse.model_json_schema()
    kept = copy.deepcopy(schema)
    compact(schema)
    assert schema == kept


def _server_with_append_tool(returns: Any) -> Any:
    """A server (``new_server``) with one tool publishing ``MemoryResponse`` as its output schema, answering
    ``returns``."""
    server = new_server("test")
    if isinstance(returns, CallToolResult):
        @server.tool(name="append_memory")
        async def answered() -> Annotated[CallToolResult, MemoryResponse]:
            return returns
    else:
        @server.tool(name="append_memory")
        async def modelled() -> MemoryResponse:
            return returns
    return server


def test_compacting_keeps_the_schema_published_and_answers_the_tools_result_as_it_made_it() -> None:
    """The schema is still published (compact); the SDK no longer re-validates the answer against the model it was
    made from, so the result the tool made is the answer, object and all."""
    result = json_result(MemoryResponse.model_validate(_memory_answers()[0]))
    server = _server_with_append_tool(result)
    published = MemoryResponse.model_json_schema()
    compact_output_schemas(server)
    tools = asyncio.run(server.list_tools())
    assert tools[0].output_schema == compact(published)
    assert server._tool_manager.list_tools()[0].fn_metadata.output_model is None
    assert asyncio.run(server.call_tool("append_memory", {})) is result


def test_a_tool_publishing_a_schema_without_answering_a_call_tool_result_is_refused() -> None:
    """Without the SDK's output model such a tool would lose its structured content: refused at build time."""
    server = _server_with_append_tool(MemoryResponse.model_validate(_memory_answers()[0]))
    with pytest.raises(TypeError, match="append_memory"):
        compact_output_schemas(server)

"""Where a validation error is (``field_names``): the one spelling of pydantic's ``loc`` in messages."""

from __future__ import annotations

from pydantic import BaseModel, ValidationError

from memory_core.wire.field_names import field_name


class Item(BaseModel):
    content: str


class Document(BaseModel):
    entries: list[Item]
    group_ids: list[str] = []


def first_loc(data: object) -> tuple[int | str, ...]:
    try:
        Document.model_validate(data)
    except ValidationError as error:
        return tuple(error.errors()[0]["loc"])
    raise AssertionError("the document validated")


def test_members_and_positions_are_joined_by_dots() -> None:
    assert field_name(first_loc({"entries": [{"content": "a"}, {}]})) == "entries.1.content"


def test_positions_may_be_bracketed_instead() -> None:
    assert field_name(first_loc({"entries": [], "group_ids": ["a", 7]}), bracketed_indexes=True) == "group_ids[1]"
    assert field_name(("entries", 0, "content"), bracketed_indexes=True) == "entries[0].content"


def test_an_error_about_the_whole_document_is_named_as_the_caller_says() -> None:
    assert first_loc([]) == ()
    assert field_name((), whole="body") == "body"
    assert field_name((), whole="arguments", bracketed_indexes=True) == "arguments"
    assert field_name(()) == ""

"""Answers show what is stored: no response model holds a field to an input rule.

Input is validated at the edge. Stored data may predate a rule, or come from an older release (a group ID holding a
bidirectional override, saved before groups were held to an agent id's rule): a response model that applied the
rule again answered such a record with a 500, and a listing lost every other item with it
(``tests/api/test_stored_agent_settings_http.py``). So no field of an answer, at any depth, carries a length, a
pattern, a range or a validator; a field whose values the code itself chooses (a ``Literal`` status) is not a rule
on stored text.
"""

from __future__ import annotations

from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel

import function_app
from memory_core.api.function_table import functions_of
from memory_core.edge import spec_of


def _response_models() -> dict[str, type[BaseModel]]:
    found = {}
    for function in functions_of(function_app.app):
        spec = spec_of(function.get_user_function())
        if spec is not None and spec.response is not None:
            found[function.get_function_name()] = spec.response
    return found


def _rules(annotation: Any, where: str, seen: set[type]) -> list[str]:
    """Every rule found in ``annotation`` (an ``Annotated`` type's metadata, or a model's fields'), named by where."""
    if get_origin(annotation) is Annotated:
        base, *metadata = get_args(annotation)
        return [f"{where}: {m!r}" for m in metadata] + _rules(base, where, seen)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation in seen:
            return []
        seen.add(annotation)
        return [rule for name, field in annotation.model_fields.items()
                for rule in [f"{annotation.__name__}.{name}: {m!r}" for m in field.metadata]
                + _rules(field.annotation, f"{annotation.__name__}.{name}", seen)]
    return [rule for arg in get_args(annotation) for rule in _rules(arg, where, seen)]


def test_the_endpoints_answers_are_found() -> None:
    models = _response_models()
    assert {"list_agent_settings", "get_agent_settings", "list_deletions", "read_audit"} <= set(models)


def test_no_answer_holds_what_is_stored_to_an_input_rule() -> None:
    rules = {name: found for name, model in _response_models().items() if (found := _rules(model, name, set()))}
    assert rules == {}

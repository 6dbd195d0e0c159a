"""Tool output schemas in their smallest equivalent form.

pydantic publishes an optional field as ``{"anyOf": [{"type": "string"}, {"type": "null"}]}``,
every enum and nested model behind a ``$ref`` into ``$defs``, and a ``title`` on every
field. A client that checks each ``structuredContent`` against the tool's output schema
(the official mcp Python client does, on every ``tools/call``) pays for each ``anyOf``
branch it tries and each ``$ref`` it resolves: on ``append_memory``'s answer, about half of
its validation time. ``compact`` rewrites a schema so it accepts exactly the same
instances with less to walk:

- a non-recursive ``$ref`` into ``$defs`` is replaced by its definition;
- ``anyOf`` of one typed schema and ``{"type": "null"}`` becomes that schema with
  ``"type": [T, "null"]``. Every keyword it may carry apart from ``enum`` (handled: null is
  added to it) applies to values of its own type only, so null stays valid and nothing
  else changes;
- ``title`` annotations (pydantic's, derived from names) are dropped; descriptions stay.

Input schemas are left as they are: models read them, and some model providers accept only
the ``anyOf`` form of a nullable type.
"""

from __future__ import annotations

from typing import Any

_DEFS_PREFIX = "#/$defs/"
_LITERAL_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
"""Keywords whose value is data, never a schema: copied as they are."""
_NOT_TYPE_SPECIFIC = frozenset({"const", "allOf", "anyOf", "oneOf", "not", "$ref", "if", "then", "else"})
"""Keywords that would constrain null too: a branch carrying one is not merged with null."""
_ANNOTATIONS = frozenset({"description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment"})
"""Keywords that constrain nothing: a union carrying only these beside ``anyOf`` may be merged."""
_NULL = {"type": "null"}


def compact(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with refs inlined, nullable unions merged and titles dropped; same instances valid.

    A recursive definition keeps its ``$ref`` (and ``$defs`` keeps it). ``schema`` is not changed.
    """
    defs: dict[str, Any] = schema.get("$defs", {})
    kept: set[str] = set()

    def walk(node: Any, inlining: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(item, inlining) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_DEFS_PREFIX) and ref[len(_DEFS_PREFIX):] in defs:
            name = ref[len(_DEFS_PREFIX):]
            if name in inlining:
                kept.add(name)
                return {key: walk(value, inlining) for key, value in node.items() if key != "title"}
            beside = {key: value for key, value in node.items() if key != "$ref"}
            return walk({**defs[name], **beside}, (*inlining, name))
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("$defs", "title"):
                continue
            if key in _LITERAL_KEYWORDS:
                out[key] = value
            elif key in ("properties", "patternProperties"):
                out[key] = {name: walk(sub, inlining) for name, sub in value.items()}
            else:
                out[key] = walk(value, inlining)
        return _merged_with_null(out)

    result = walk(schema, ())
    if kept:
        result["$defs"] = {name: walk(defs[name], (name,)) for name in sorted(kept)}
    return result


def _merged_with_null(node: dict[str, Any]) -> dict[str, Any]:
    branches = node.get("anyOf")
    if not (isinstance(branches, list) and len(branches) == 2 and _NULL in branches):
        return node
    if set(node) - {"anyOf"} - _ANNOTATIONS:
        return node
    other = branches[1] if branches[0] == _NULL else branches[0]
    if not isinstance(other, dict) or not isinstance(other.get("type"), str) or set(other) & _NOT_TYPE_SPECIFIC:
        return node
    merged = {**other, **{key: value for key, value in node.items() if key != "anyOf"}}
    merged["type"] = [other["type"], "null"]
    if "enum" in other:
        merged["enum"] = [*other["enum"], None]
    return merged

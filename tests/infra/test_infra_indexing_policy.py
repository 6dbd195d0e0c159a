"""The Memories container's indexing policy covers every field the app's Cosmos DB queries use.

infra/arm/cosmos-sql.json excludes the root path and includes only the fields the
queries filter or sort on, so the hot writes (entries with up to MEMORY_MAX_WRITE_BYTES of
content_markdown) do not pay to index content nobody filters on. The price of an
opt-in policy is that a new query on a field outside it fails in Azure: a filter on an
excluded path is refused ("filters against path(s) excluded from indexing") and an
ORDER BY needs a range index (https://learn.microsoft.com/azure/cosmos-db/index-policy).
The emulator the store tests run against ignores indexing policies, so this test reads
every Cosmos SQL text in memory_core/ and checks it against the template: a later
change that adds a query field fails here, naming the field, instead of in production.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

import pytest

from tests.infra.infra_support import INFRA, REPO

CONTAINER_TYPE = "Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers"
# Formatted values of an f-string (a caller-chosen field name) stand for "any name here".
ANY = "\x00"
# Always indexed in consistent mode, whatever the policy says (index-policy docs).
SYSTEM_PATHS = {("id",), ("_ts",)}
_REF = re.compile(r"\bc((?:\.[A-Za-z_][A-Za-z0-9_]*|\[\"[^\"]*\"\])+)")
_SEGMENT = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[\"([^\"]*)\"\]")
_FULL_TEXT_CALL = re.compile(r"\b(FullText(?:Contains|ContainsAll|ContainsAny|Score))\s*\(\s*c((?:\.[A-Za-z_]\w*)+)", re.IGNORECASE)


def _container() -> dict:
    template = json.loads((INFRA / "arm" / "cosmos-sql.json").read_text())
    return next(r for r in template["resources"] if r["type"] == CONTAINER_TYPE)["properties"]["resource"]


def _policy() -> dict:
    return _container()["indexingPolicy"]


# ----------------------------------------------------------------------------- reading the queries
def _render(node: ast.AST) -> str | None:
    """A string constant or f-string as text, formatted values replaced by ANY."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else ANY for v in node.values)
    return None


def cosmos_sql_texts() -> dict[str, list[str]]:
    """Every SQL text (a string that selects FROM c) in memory_core/, by file.

    Query strings are built from literal pieces (``sql += f' AND c.data["{name}"] = @w{n}'``),
    so each literal piece that names a field of ``c`` counts, whether or not it holds FROM.
    Files that never select FROM c are not read further, but for the Cosmos store's own modules,
    which extend queries built elsewhere (``cosmos_records.page_records``).
    """
    found: dict[str, list[str]] = {}
    for path in sorted((REPO / "memory_core").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if not re.search(r"\bFROM c\b", text) and not path.name.startswith("cosmos_"):
            continue
        pieces = []
        tree = ast.parse(text)
        inner = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant | ast.JoinedStr) and id(node) not in inner:
                rendered = _render(node)
                if rendered and (re.search(r"\bFROM c\b", rendered) or re.search(r"\b(AND|OR|WHERE|BY)\b.*\bc[.\[]", rendered)):
                    pieces.append(rendered)
        if pieces:
            found[str(path.relative_to(REPO))] = pieces
    return found


def _path_of(ref: str) -> tuple[str, ...]:
    return tuple(a or b for a, b in _SEGMENT.findall(ref))


def query_fields(sql: str) -> dict[str, Any]:
    """Fields a query filters on ("filter"), sorts on ("order") or full-text searches ("full_text")."""
    full_text = {_path_of(m.group(2)) for m in _FULL_TEXT_CALL.finditer(sql)}
    plain = _FULL_TEXT_CALL.sub(" ", sql)
    where, order = _split_order(plain)
    select_end = re.search(r"\bFROM c\b", where)
    filtered = where[select_end.end():] if select_end else where  # the projection is not a filter
    return {
        "filter": {_path_of(m.group(1)) for m in _REF.finditer(filtered)},
        "order": [_path_of(m.group(1)) for m in _REF.finditer(order)],
        "full_text": full_text,
    }


def _split_order(sql: str) -> tuple[str, str]:
    """(everything before ORDER BY, the ORDER BY list)."""
    parts = re.split(r"\bORDER\s+BY\b", sql, maxsplit=1, flags=re.IGNORECASE)
    return (parts[0], parts[1]) if len(parts) == 2 else (parts[0], "")


# ----------------------------------------------------------------------------- evaluating the policy
def _pattern(path: str) -> tuple[tuple[str, ...], bool]:
    """An index path ("/a/b/?" or "/a/*") as (segments, covers_subtree)."""
    parts = [p.strip('"') for p in path.strip("/").split("/")]
    if parts[-1] == "*":
        return tuple(parts[:-1]), True
    if parts[-1] == "?":
        return tuple(parts[:-1]), False
    raise AssertionError(f"index path {path!r} ends in neither /? nor /*")


def _matches(pattern: tuple[tuple[str, ...], bool], field: tuple[str, ...]) -> bool:
    segments, subtree = pattern
    if subtree:
        return field[: len(segments)] == segments
    return field == segments


def range_indexed(policy: dict, field: tuple[str, ...]) -> bool:
    """Whether ``field`` has a range index: the most precise matching path decides (index-policy docs).

    A field ending in ANY (a caller-chosen name under a parent) is covered only when a
    subtree path includes its parent and no more precise excluded path sits below it.
    """
    if field in SYSTEM_PATHS:
        return True
    rules = [(_pattern(p["path"]), True) for p in policy.get("includedPaths", [])]
    rules += [(_pattern(p["path"]), False) for p in policy.get("excludedPaths", [])]
    if ANY in field:
        parent = field[: field.index(ANY)]
        for (segments, _subtree), included in rules:
            if not included and segments[: len(parent)] == parent and len(segments) > len(parent):
                return False  # something under the parent is excluded
        field = parent
        candidates = [(p, inc) for p, inc in rules if p[1] and field[: len(p[0])] == p[0]]
    else:
        candidates = [(p, inc) for p, inc in rules if _matches(p, field)]
    if not candidates:
        return False
    best = max(candidates, key=lambda r: (len(r[0][0]), not r[0][1]))  # longer, then exact over subtree
    return best[1]


def _all_queries() -> list[tuple[str, str]]:
    return [(file, sql) for file, texts in cosmos_sql_texts().items() for sql in texts]


# ----------------------------------------------------------------------------- the tests
def test_the_query_reader_finds_the_store_queries():
    """The reader sees the store's queries and the fields they use, so the coverage test
    below cannot pass by reading nothing."""
    files = cosmos_sql_texts()
    assert {"memory_core/adapters/cosmos_reads.py", "memory_core/adapters/cosmos_records.py"} <= set(files)
    filtered = set().union(*(query_fields(sql)["filter"] for _, sql in _all_queries()))
    assert {("instance_id",), ("upn",), ("record_kind",), ("profile_id",), ("type",), ("data", ANY)} <= filtered


@pytest.mark.parametrize("file_sql", _all_queries(), ids=lambda fs: f"{fs[0]}:{fs[1][:60]}")
def test_every_query_field_is_indexed(file_sql):
    """Each field a query filters or sorts on has a range index, each full-text search runs
    on a path with a full-text index, and an ORDER BY on several fields has a composite index."""
    file, sql = file_sql
    policy = _policy()
    fields = query_fields(sql)
    for field in fields["filter"] | set(fields["order"]):
        shown = ".".join("<name>" if s == ANY else s for s in field)
        assert range_indexed(policy, field), (
            f"{file}: the query filters or sorts on c.{shown}, which infra/arm/cosmos-sql.json does not index; "
            f"add it to includedPaths (and say so in docs/deploy.md's migration note)\n{sql}"
        )
    full_text_paths = {tuple(p["path"].strip("/").split("/")) for p in policy.get("fullTextIndexes", [])}
    for field in fields["full_text"]:
        assert field in full_text_paths, f"{file}: full-text search on c.{'.'.join(field)} has no full-text index\n{sql}"
    if len(fields["order"]) > 1:
        wanted = ["/" + "/".join(f) for f in fields["order"]]
        composites = [[c["path"] for c in group] for group in policy.get("compositeIndexes", [])]
        assert wanted in composites, f"{file}: ORDER BY {wanted} needs a composite index\n{sql}"


def test_content_is_not_range_indexed():
    """content_markdown (up to MEMORY_MAX_WRITE_BYTES per entry) has no range index: it is
    excluded explicitly, so even a later switch of the root to included keeps it out."""
    policy = _policy()
    assert not range_indexed(policy, ("content_markdown",))
    assert "/content_markdown/?" in [p["path"] for p in policy["excludedPaths"]]
    assert not range_indexed(policy, ("tags",)) and not range_indexed(policy, ("reason",))


def test_partition_key_paths_are_indexed():
    """The partition key paths are not indexed by themselves and every query filters on them."""
    policy = _policy()
    assert range_indexed(policy, ("instance_id",)) and range_indexed(policy, ("upn",))


def test_policy_is_opt_in_and_consistent():
    """The root is excluded (opt-in), indexing is consistent and automatic."""
    policy = _policy()
    assert policy["indexingMode"] == "consistent" and policy["automatic"] is True
    assert {"path": "/*"} in policy["excludedPaths"]
    assert {"path": "/*"} not in policy["includedPaths"]


def test_full_text_policy_and_index_cover_the_content():
    """Full-text search (Cosmos DB FullTextContains / FullTextScore) runs on /content_markdown:
    the container's full-text policy names the path with a language, and the indexing policy
    has the matching full-text index, as the full-text search docs require."""
    container = _container()
    paths = container["fullTextPolicy"]["fullTextPaths"]
    assert [p["path"] for p in paths] == ["/content_markdown"]
    assert all(p["language"] for p in paths) and container["fullTextPolicy"]["defaultLanguage"]
    assert container["indexingPolicy"]["fullTextIndexes"] == [{"path": "/content_markdown"}]


def test_time_to_live_is_on_without_expiring_anything_by_default():
    """defaultTtl -1: items never expire unless they carry their own ttl (audit retention and
    finished deletion requests set one)."""
    assert _container()["defaultTtl"] == -1


def test_a_query_on_an_unindexed_field_would_fail_this_test():
    """The check is real: a query on c.content_markdown or c.tags, or a two-field ORDER BY
    without a composite index, is reported."""
    policy = _policy()
    bad = "SELECT * FROM c WHERE c.instance_id = @i AND c.upn = @u AND c.content_markdown = @x"
    assert not all(range_indexed(policy, f) for f in query_fields(bad)["filter"])
    ordered = query_fields("SELECT * FROM c WHERE c.upn = @u ORDER BY c.created_on DESC, c.id DESC")
    assert ordered["order"] == [("created_on",), ("id",)]
    assert [["/created_on", "/id"]] not in [[[c["path"] for c in g] for g in policy.get("compositeIndexes", [])]]


def test_fields_the_item_layout_writes_are_real():
    """Every field the policy includes is one the item layout (cosmos_documents.py) writes,
    so a renamed field cannot leave a stale index behind silently."""
    layout = (REPO / "memory_core" / "adapters" / "cosmos_documents.py").read_text()
    for included in _policy()["includedPaths"]:
        name = included["path"].strip("/").split("/")[0]
        assert f'"{name}"' in layout, name


def test_full_text_calls_are_read_as_full_text_not_as_filters():
    """A FullTextScore / FullTextContains call on a field asks for a full-text index, not a
    range index; the ORDER BY RANK of a search is not a plain sort."""
    sql = "SELECT TOP 10 * FROM c WHERE c.upn = @u ORDER BY RANK FullTextScore(c.content_markdown, @t)"
    fields = query_fields(sql)
    assert fields["full_text"] == {("content_markdown",)}
    assert fields["filter"] == {("upn",)} and fields["order"] == []

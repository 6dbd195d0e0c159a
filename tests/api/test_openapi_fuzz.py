"""schemathesis against the served /api/openapi.json: the document and the service agree.

Every user and operator operation is generated from the document, as valid
and as invalid requests, sent to `serve` on the embedded store with real
credentials, and checked: no 5xx, every status and content type documented,
every answer valid against its schema, invalid input refused. Bounded: a fixed
number of derandomized examples per operation and mode (about a minute here).

schemathesis's own pytest plugin does not run under pytest 9, so the cases
are drawn with hypothesis directly; failures are collected (one per operation
and check) instead of shrunk, and reported together.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode, checks
from schemathesis.config import SchemathesisConfig
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.support.local_server import OPERATOR_KEY, USER_KEY, RunningServer, identity, running_server

EXAMPLES = {GenerationMode.POSITIVE: 20, GenerationMode.NEGATIVE: 15}
# A request that breaks the schema must be refused. schemathesis's default list of refusals lacks 413,
# which is this service's documented answer to a body over the endpoint's limit, checked before the body is
# parsed (a policy_instructions past maxLength in 4-byte characters is also over 64 KiB). Random runs with
# more examples met it on 3 of 4 runs of 400 cases; the derandomized run below does not, today.
CONFIG = SchemathesisConfig.from_str(
    "[checks.negative_data_rejection]\n"
    'expected-statuses = [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429, "5XX"]\n'
)
CHECKS = [
    checks.not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
    negative_data_rejection,
]


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server of its own (default settings: deletions wait for operator approval)."""
    with running_server(tmp_path_factory.mktemp("schemathesis")) as server:
        yield server


def _headers(path: str) -> dict[str, str]:
    if "/operator/" in path:
        return {"X-API-KEY": OPERATOR_KEY}
    return {"X-API-KEY": USER_KEY, "X-USER-IDENTITY": identity("fuzz@contoso.com")}


def _failures(error: BaseException) -> list[str]:
    found = error.exceptions if isinstance(error, FailureGroup) else [error]
    return [f"{type(f).__name__}: {getattr(f, 'title', '')} {str(f)[:300]}" for f in found]


def test_the_service_matches_its_openapi_document(fuzz_server: RunningServer) -> None:
    """0 server errors and 0 schema violations over every user and operator operation."""
    schema = schemathesis.openapi.from_url(f"{fuzz_server.api}/openapi.json", config=CONFIG)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert any("/operator/" in op.path for op in operations) and any("/memory" in op.path for op in operations)
    problems: dict[tuple[str, str], str] = {}
    calls = 0
    for operation in operations:
        for mode, examples in EXAMPLES.items():

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                      suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
            def run(case: schemathesis.Case) -> None:
                nonlocal calls
                calls += 1
                try:
                    case.call_and_validate(base_url=fuzz_server.base_url, headers=_headers(operation.path),
                                           checks=CHECKS)
                except (Failure, FailureGroup) as error:
                    for problem in _failures(error):
                        problems.setdefault((operation.label, problem.split(":", 1)[0] + problem[:80]),
                                            f"{operation.label} [{mode.value}] {problem}")

            run()
    print(f"schemathesis: {len(operations)} operations, {calls} requests, {len(problems)} problems")
    assert not problems, "\n".join(sorted(problems.values()))

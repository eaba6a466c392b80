"""The checked-in OpenAPI document against the API as served locally, with schemathesis.

Every operation gets a small, deterministic budget of generated requests (valid ones and invalid ones),
sent by a signed-in user through the local API server to the real API function on the local cloud. Each
answer must be no server error, have a documented status code and match the documented body schema;
an invalid request must be refused (4xx), so the document says no less than the validation enforces.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from benchgen.aws.tables.environments import EnvironmentsRepo
from benchgen.records.environments import EnvironmentRecord, EnvironmentStatus
from benchgen.settings import load_settings
from localcloud.cloud import LocalCloud

OPENAPI = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
EXAMPLES_PER_OPERATION = 10
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
]

# Methods the document does not list are answered by API Gateway, not by the API function: this test
# sends only the ones the local server routes, and test_api_server covers its answer to the rest.
UNLISTED_METHODS = ["get", "put", "post", "delete", "patch", "options"]

schema = schemathesis.openapi.from_path(
    str(OPENAPI),
    config=SchemathesisConfig.from_dict({"phases": {"coverage": {"unexpected-methods": UNLISTED_METHODS}}}),
)

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def _idle(event: Any, context: Any) -> None:
    return None


@pytest.fixture(scope="module")
def served(stack_templates: dict[str, dict[str, Any]]) -> Iterator[tuple[str, dict[str, str]]]:
    """The API on loopback over a fresh local cloud with one registered environment, and a user's token."""
    with pytest.MonkeyPatch.context() as patch:
        for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "PRESIGN_TTL_SECONDS"):
            patch.delenv(name, raising=False)
        handlers = dict.fromkeys(("register_environment", "ingest", "score", "build_artifact"), _idle)
        with LocalCloud(stack_templates, handlers=handlers) as cloud:
            EnvironmentsRepo(load_settings().environments_table).put_if_absent(
                EnvironmentRecord(
                    environment_id="gsm8k",
                    version="1",
                    status=EnvironmentStatus.REGISTERED,
                    title="GSM8K",
                    bundle_key="environments/gsm8k/1/bundle.zip",
                )
            )
            token = cloud.create_user("author@example.com", "Correct-Horse-9-Battery!")
            with cloud.serve_api(access_log=False) as server:
                yield server.url, {"Authorization": token}


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_answers_as_its_openapi_document_says(
    case: schemathesis.Case[Any], served: tuple[str, dict[str, str]]
) -> None:
    base_url, headers = served
    # The user's token replaces the generated one; a case made invalid by leaving the required header out
    # is sent without it, so that the API's refusal of it is what the check sees.
    if case.headers and "Authorization" in case.headers:
        case.headers.update(headers)
    case.call_and_validate(base_url=base_url, checks=CHECKS, timeout=30)

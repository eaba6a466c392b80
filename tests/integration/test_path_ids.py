"""Every route with an id in its path answers an id no resource can have as it answers an id nothing has:
404, saying why, through the API as served locally."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import quote

from cli.api_client import Api
from localcloud.cloud import LocalCloud

OPENAPI = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
ID_RULE = "1-160 letters, digits, '.', '_' or '-', starting with a letter or digit"
RUN_ID_RULE = "1-128 letters, digits, '.', '_' or '-', starting with a letter or digit"


def _id_routes() -> list[tuple[str, str, str]]:
    """(method, path template, id parameter) of every operation the document lists with an id in its path."""
    paths = json.loads(OPENAPI.read_text())["paths"]
    return [
        (method.upper(), template, match[1])
        for template, operations in paths.items()
        if (match := re.search(r"\{(\w+_id)\}", template))
        for method in operations
    ]


def _expected(parameter: str, shown: str) -> str:
    if parameter == "run_id":
        return (
            f"no run {shown!r}: no run can have this id (a run id is {RUN_ID_RULE}), so a submission "
            f"uploaded under submissions/{shown}/ is refused and never scored; create a run with POST "
            "/runs and upload to the URL it returns"
        )
    noun = parameter.removesuffix("_id").replace("_", " ")
    return f"no {noun} {shown!r}: no {noun} can have this id (an id is {ID_RULE}); check the id"


def test_every_route_answers_an_id_no_resource_can_have_with_a_404_saying_why(cloud: LocalCloud) -> None:
    # Given the routes with an id in their path (21 operations), and ids of every wrong shape
    routes = _id_routes()
    assert len(routes) == 21
    malformed = ["bad id", "-leading-dash", "x" * 161, "rün"]

    # When a signed-in user sends each operation each of them
    with cloud.serve_api(access_log=False) as server:
        api = Api(server.url, cloud.create_user("asker@example.com", "Asker-Passw0rd!x"))
        answers = {
            (method, template, bad): api.call(
                method,
                template.replace("{" + parameter + "}", quote(bad, safe="")),
                {} if method == "POST" else None,
            )
            for method, template, parameter in routes
            for bad in malformed
        }

    # Then each answered 404, naming the id and what an id of its kind is
    for method, template, parameter in routes:
        for bad in malformed:
            status, body = answers[(method, template, bad)]
            assert (status, body["message"]) == (404, _expected(parameter, bad)), (method, template, bad)

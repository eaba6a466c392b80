"""The API function answers the console's origin, as the stack names it, through the local REST API."""

from __future__ import annotations

import http.client

from benchgen.settings import load_settings
from localcloud.api_server import ApiServer
from localcloud.cloud import LocalCloud

PASSWORD = "Correct-Horse-42!"


def _get(server: ApiServer, path: str, headers: dict[str, str]) -> tuple[int, http.client.HTTPMessage]:
    host, port = server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        response.read()
        return response.status, response.headers
    finally:
        connection.close()


def test_the_api_allows_the_consoles_origin_and_no_other(api_cloud: LocalCloud) -> None:
    # Given the stack's console origin, as the api function reads it from its environment
    console = load_settings().console_origin
    assert console is not None
    assert console.startswith("https://") and console.endswith(".cloudfront.invalid")
    token = api_cloud.create_user("alice@example.com", PASSWORD)
    with api_cloud.serve_api(access_log=False) as server:
        # When the console lists runs, and asks for a run that does not exist
        listed = _get(server, "/runs", {"Authorization": token, "Origin": console})
        missing = _get(server, "/runs/no-such-run", {"Authorization": token, "Origin": console})
        # and another site asks too
        other = _get(server, "/runs", {"Authorization": token, "Origin": "https://elsewhere.example"})

    # Then the console may read both answers, and the other site may read neither
    assert (listed[0], listed[1]["Access-Control-Allow-Origin"]) == (200, console)
    assert (missing[0], missing[1]["Access-Control-Allow-Origin"]) == (404, console)
    assert other[0] == 200
    assert other[1]["Access-Control-Allow-Origin"] is None

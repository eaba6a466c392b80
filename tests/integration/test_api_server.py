"""The local REST API: Cognito token checks and HTTP requests turned into API Gateway proxy events."""

from __future__ import annotations

import base64
import http.client
import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from joserfc import jwk, jwt
from moto import mock_aws
from moto.utilities.utils import load_resource

from benchgen.aws.tables.runs import RunsRepo
from benchgen.records.runs import RunConfig, RunRecord
from benchgen.settings import load_settings
from localcloud.api_server import ApiServer
from localcloud.auth import TokenVerifier, Unauthorized, moto_jwks
from localcloud.cloud import LocalCloud
from localcloud.stack_template import Route

REGION = "us-east-1"
PASSWORD = "Correct-Horse-42!"
ROUTES = [
    Route("/runs", "GET", authorized=True),
    Route("/runs", "POST", authorized=True),
    Route("/runs/{run_id}", "GET", authorized=True),
    Route("/runs/latest", "GET", authorized=True),
    Route("/runs/{run_id}/files", "GET", authorized=True),
    Route("/health", "GET", authorized=False),
]


@dataclass
class Pool:
    pool_id: str
    client_id: str
    other_client_id: str
    cognito: Any

    def verifier(self) -> TokenVerifier:
        return TokenVerifier(
            user_pool_id=self.pool_id,
            client_id=self.client_id,
            jwks=moto_jwks(),
        )

    def tokens(self, username: str, client_id: str | None = None) -> dict[str, str]:
        result = self.cognito.initiate_auth(
            ClientId=client_id or self.client_id,
            AuthFlow="USER_PASSWORD_AUTH",
            AuthParameters={"USERNAME": username, "PASSWORD": PASSWORD},
        )
        tokens: dict[str, str] = result["AuthenticationResult"]
        return tokens


def _pool(cognito: Any, name: str) -> Pool:
    pool_id = cognito.create_user_pool(PoolName=name)["UserPool"]["Id"]

    def client(client_name: str) -> str:
        created = cognito.create_user_pool_client(
            UserPoolId=pool_id, ClientName=client_name, ExplicitAuthFlows=["ALLOW_USER_PASSWORD_AUTH"]
        )
        return str(created["UserPoolClient"]["ClientId"])

    for username in ("alice", "bob"):
        cognito.admin_create_user(UserPoolId=pool_id, Username=username, MessageAction="SUPPRESS")
        cognito.admin_set_user_password(
            UserPoolId=pool_id, Username=username, Password=PASSWORD, Permanent=True
        )
    return Pool(pool_id, client("web"), client("other"), cognito)


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[Pool]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield _pool(boto3.client("cognito-idp", region_name=REGION), "users")


def _signed_like_moto(claims: dict[str, Any]) -> str:
    key = jwk.RSAKey.import_key(load_resource("cognitoidp/resources/jwks-private.json"))
    return jwt.encode({"kid": "dummy", "alg": "RS256"}, claims, key)


# auth


def test_valid_id_token_gives_its_claims(pool: Pool) -> None:
    claims = pool.verifier().verify(pool.tokens("alice")["IdToken"])
    assert claims["cognito:username"] == "alice"
    assert claims["aud"] == pool.client_id
    assert claims["iss"] == f"https://cognito-idp.{REGION}.amazonaws.com/{pool.pool_id}"


def test_bearer_prefix_is_accepted(pool: Pool) -> None:
    claims = pool.verifier().verify("Bearer " + pool.tokens("bob")["IdToken"])
    assert claims["cognito:username"] == "bob"


def test_tampered_token_is_rejected(pool: Pool) -> None:
    # given a token whose payload was edited to claim another user
    header, payload, signature = pool.tokens("alice")["IdToken"].split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["cognito:username"] = "admin"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")

    # then the signature check refuses it
    with pytest.raises(Unauthorized):
        pool.verifier().verify(f"{header}.{forged}.{signature}")


def test_expired_token_is_rejected(pool: Pool) -> None:
    # given a token signed with the pool's key that expired a minute ago
    now = int(time.time())
    token = _signed_like_moto(
        {
            "iss": f"https://cognito-idp.{REGION}.amazonaws.com/{pool.pool_id}",
            "aud": pool.client_id,
            "sub": "user-1",
            "token_use": "id",
            "iat": now - 3660,
            "exp": now - 60,
        }
    )
    with pytest.raises(Unauthorized, match="exp"):
        pool.verifier().verify(token)


def test_token_for_another_app_client_is_rejected(pool: Pool) -> None:
    with pytest.raises(Unauthorized, match="aud"):
        pool.verifier().verify(pool.tokens("alice", client_id=pool.other_client_id)["IdToken"])


def test_token_from_another_user_pool_is_rejected(pool: Pool) -> None:
    # moto signs every pool's tokens with one key: only the issuer tells them apart
    other = _pool(pool.cognito, "other-users")
    verifier = TokenVerifier(
        user_pool_id=pool.pool_id,
        client_id=other.client_id,
        jwks=moto_jwks(),
    )
    with pytest.raises(Unauthorized, match="iss"):
        verifier.verify(other.tokens("alice")["IdToken"])


def test_access_token_is_not_an_id_token(pool: Pool) -> None:
    with pytest.raises(Unauthorized):
        pool.verifier().verify(pool.tokens("alice")["AccessToken"])


def test_missing_token_is_rejected(pool: Pool) -> None:
    with pytest.raises(Unauthorized):
        pool.verifier().verify(None)


# HTTP server


class StandInApi:
    """Stands in for functions.api.handler: records the event, answers with a fixed proxy response."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.contexts: list[Any] = []
        self.fail = False

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.events.append(event)
        self.contexts.append(context)
        if self.fail:
            raise RuntimeError("boom")
        return {
            "statusCode": 201,
            "headers": {"Content-Type": "application/json"},
            "multiValueHeaders": {"Set-Cookie": ["a=1", "b=2"]},
            "body": json.dumps({"run_id": "r-9"}),
            "isBase64Encoded": False,
        }


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@pytest.fixture
def api(pool: Pool) -> Iterator[tuple[ApiServer, StandInApi]]:
    stand_in = StandInApi()
    with ApiServer(ROUTES, stand_in, pool.verifier(), stage="prod", function_name="api") as server:
        yield server, stand_in


def _request(
    server: ApiServer,
    method: str,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> Answer:
    host, port = server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return Answer(response.status, response.headers, response.read())
    finally:
        connection.close()


def test_request_reaches_the_handler_as_an_api_gateway_proxy_event(
    api: tuple[ApiServer, StandInApi], pool: Pool
) -> None:
    server, stand_in = api
    token = pool.tokens("alice")["IdToken"]

    # when a client calls a route with a path parameter and a repeated query parameter
    _request(server, "GET", "/runs/r-1/files?limit=5&status=a&status=b", headers={"Authorization": token})

    # then the handler got the event API Gateway would build
    (event,) = stand_in.events
    assert event["resource"] == "/runs/{run_id}/files"
    assert event["path"] == "/runs/r-1/files"
    assert event["httpMethod"] == "GET"
    assert event["pathParameters"] == {"run_id": "r-1"}
    assert event["queryStringParameters"] == {"limit": "5", "status": "b"}
    assert event["multiValueQueryStringParameters"] == {"limit": ["5"], "status": ["a", "b"]}
    assert event["headers"]["Authorization"] == token
    assert event["multiValueHeaders"]["Authorization"] == [token]
    assert event["body"] is None and event["isBase64Encoded"] is False
    context = event["requestContext"]
    assert context["stage"] == "prod"
    assert context["resourcePath"] == "/runs/{run_id}/files"
    assert context["path"] == "/prod/runs/r-1/files"
    assert len(context["requestId"]) == 36
    claims = context["authorizer"]["claims"]
    assert claims["cognito:username"] == "alice"
    assert claims["aud"] == pool.client_id
    assert all(isinstance(value, str) for value in claims.values())
    assert stand_in.contexts[0].function_name == "api"


def test_handler_response_is_returned_to_the_client(api: tuple[ApiServer, StandInApi], pool: Pool) -> None:
    server, _ = api
    answer = _request(
        server,
        "POST",
        "/runs",
        headers={"Authorization": pool.tokens("alice")["IdToken"], "Content-Type": "application/json"},
        body=b'{"environment_id": "gsm8k"}',
    )
    assert answer.status == 201
    assert answer.json() == {"run_id": "r-9"}
    assert answer.headers["Content-Type"] == "application/json"
    assert answer.headers.get_all("Set-Cookie") == ["a=1", "b=2"]


def test_json_body_arrives_as_text(api: tuple[ApiServer, StandInApi], pool: Pool) -> None:
    server, stand_in = api
    headers = {"Authorization": pool.tokens("alice")["IdToken"], "Content-Type": "application/json"}
    _request(server, "POST", "/runs", headers=headers, body=b'{"model": "qwen"}')
    assert stand_in.events[0]["body"] == '{"model": "qwen"}'
    assert stand_in.events[0]["isBase64Encoded"] is False


def test_binary_body_arrives_base64_encoded(api: tuple[ApiServer, StandInApi], pool: Pool) -> None:
    server, stand_in = api
    headers = {"Authorization": pool.tokens("alice")["IdToken"], "Content-Type": "application/zip"}
    _request(server, "POST", "/runs", headers=headers, body=b"PK\x03\x04\xff")
    assert stand_in.events[0]["isBase64Encoded"] is True
    assert base64.b64decode(stand_in.events[0]["body"]) == b"PK\x03\x04\xff"


def test_literal_route_wins_over_a_path_parameter(api: tuple[ApiServer, StandInApi], pool: Pool) -> None:
    server, stand_in = api
    _request(server, "GET", "/runs/latest", headers={"Authorization": pool.tokens("alice")["IdToken"]})
    assert stand_in.events[0]["resource"] == "/runs/latest"
    assert stand_in.events[0]["pathParameters"] is None


def test_missing_token_gets_401_and_never_reaches_the_handler(api: tuple[ApiServer, StandInApi]) -> None:
    server, stand_in = api
    answer = _request(server, "GET", "/runs")
    assert answer.status == 401
    assert answer.json() == {"message": "Unauthorized"}
    assert stand_in.events == []


def test_invalid_token_gets_401(api: tuple[ApiServer, StandInApi]) -> None:
    server, stand_in = api
    answer = _request(server, "GET", "/runs", headers={"Authorization": "not-a-jwt"})
    assert answer.status == 401
    assert answer.json() == {"message": "Unauthorized"}
    assert stand_in.events == []


def test_route_without_authorizer_needs_no_token(api: tuple[ApiServer, StandInApi]) -> None:
    server, stand_in = api
    answer = _request(server, "GET", "/health")
    assert answer.status == 201
    assert "authorizer" not in stand_in.events[0]["requestContext"]


def test_unknown_route_gets_api_gateways_403(api: tuple[ApiServer, StandInApi], pool: Pool) -> None:
    server, stand_in = api
    answer = _request(server, "DELETE", "/runs", headers={"Authorization": pool.tokens("alice")["IdToken"]})
    assert answer.status == 403
    assert answer.json() == {"message": "Missing Authentication Token"}
    assert stand_in.events == []


def test_a_method_no_route_defines_gets_api_gateways_403_as_json(
    api: tuple[ApiServer, StandInApi], pool: Pool
) -> None:
    server, stand_in = api
    answer = _request(server, "PURGE", "/runs", headers={"Authorization": pool.tokens("alice")["IdToken"]})
    assert answer.status == 403
    assert answer.json() == {"message": "Missing Authentication Token"}
    assert stand_in.events == []


def test_a_chunked_body_reaches_the_handler_whole_and_the_connection_serves_the_next_request(
    api: tuple[ApiServer, StandInApi], pool: Pool
) -> None:
    server, stand_in = api
    token = pool.tokens("alice")["IdToken"]
    host, port = server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        # when a client sends a body in chunks, then another request on the same connection
        chunks = iter([b'{"environment_id": ', b'"gsm8k", ', b'"model": "m"}'])
        headers = {"Authorization": token, "Content-Type": "application/json"}
        connection.request("POST", "/runs", body=chunks, headers=headers, encode_chunked=True)
        first = connection.getresponse()
        first.read()
        connection.request("GET", "/runs/r-7", headers={"Authorization": token})
        second = connection.getresponse()
        second.read()
    finally:
        connection.close()

    # then the handler got the whole body, and the next request as sent
    assert (first.status, second.status) == (201, 201)
    assert [event["httpMethod"] + " " + event["path"] for event in stand_in.events] == [
        "POST /runs",
        "GET /runs/r-7",
    ]
    assert json.loads(stand_in.events[0]["body"]) == {"environment_id": "gsm8k", "model": "m"}


def test_a_malformed_chunked_body_gets_a_400_that_says_so(
    api: tuple[ApiServer, StandInApi], pool: Pool
) -> None:
    server, stand_in = api
    answer = _request(
        server,
        "POST",
        "/runs",
        headers={"Authorization": pool.tokens("alice")["IdToken"], "Transfer-Encoding": "chunked"},
        body=b"zz\r\n{}\r\n0\r\n\r\n",
    )
    assert answer.status == 400
    assert "chunk size" in answer.json()["message"]
    assert stand_in.events == []


def test_a_body_over_api_gateways_limit_gets_a_413_the_client_reads(
    api: tuple[ApiServer, StandInApi], pool: Pool
) -> None:
    # Given a client that sends all of an 11 MiB body before it reads the answer (as http.client does)
    server, stand_in = api
    body = b"x" * (11 * 1024 * 1024)

    # When it is posted
    answer = _request(
        server, "POST", "/runs", headers={"Authorization": pool.tokens("alice")["IdToken"]}, body=body
    )

    # Then the client reads API Gateway's 413 (the server used to close on the unread body: a broken pipe)
    assert (answer.status, answer.json()) == (413, {"message": "Request Too Long"})
    assert stand_in.events == []


def test_handler_failure_gets_502(api: tuple[ApiServer, StandInApi], pool: Pool) -> None:
    server, stand_in = api
    stand_in.fail = True
    answer = _request(server, "GET", "/runs", headers={"Authorization": pool.tokens("alice")["IdToken"]})
    assert answer.status == 502
    assert answer.json() == {"message": "Internal server error"}


def test_stopped_server_releases_its_port(pool: Pool) -> None:
    # given a server that was started and stopped
    with ApiServer(ROUTES, StandInApi(), pool.verifier(), function_name="api") as server:
        url = server.url

    # then nothing listens on its port any more
    host, port = url.removeprefix("http://").split(":")
    with pytest.raises(ConnectionRefusedError):
        http.client.HTTPConnection(host, int(port), timeout=2).request("GET", "/runs")


# the real API function behind the server


def _sub(cloud: LocalCloud, username: str) -> str:
    user = cloud.client("cognito-idp").admin_get_user(UserPoolId=cloud.user_pool_id, Username=username)
    sub: str = next(attribute["Value"] for attribute in user["UserAttributes"] if attribute["Name"] == "sub")
    return sub


def test_concurrent_users_each_see_only_their_own_run_configuration(api_cloud: LocalCloud) -> None:
    # given two users, each owning a run with its own configuration
    tokens = {}
    for user, temperature in (("alice", 0.1), ("bob", 0.9)):
        tokens[user] = api_cloud.create_user(f"{user}@example.com", PASSWORD)
        RunsRepo(load_settings().runs_table).create(
            RunRecord(
                run_id=f"run-{user}",
                environment_id="gsm8k",
                environment_version="v1",
                model="m",
                owner=_sub(api_cloud, f"{user}@example.com"),
                run_config=RunConfig(sampling={"temperature": temperature}),
            )
        )
    own = {"alice": {"temperature": 0.1}, "bob": {"temperature": 0.9}}

    with api_cloud.serve_api(access_log=False) as server:

        def ask(user: str, run_owner: str) -> tuple[str, str, int, Any]:
            answer = _request(
                server, "GET", f"/runs/run-{run_owner}/config", headers={"Authorization": tokens[user]}
            )
            return user, run_owner, answer.status, answer.json()

        # when both ask at the same time, many times, for their own run's configuration and the other's
        asked = [(user, run_owner) for _ in range(20) for user in own for run_owner in own]
        with ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(pool.map(lambda pair: ask(*pair), asked))

    # then each owner got their own configuration and every request for another's was refused
    wrong = [
        (user, run_owner, status)
        for user, run_owner, status, body in answers
        if (status, body.get("sampling")) != ((200, own[user]) if user == run_owner else (403, None))
    ]
    assert wrong == []


def test_a_burst_of_concurrent_posts_is_queued_and_every_request_is_answered(api_cloud: LocalCloud) -> None:
    # given a signed-in user and the four POST routes that start work
    token = api_cloud.create_user("burst@example.com", PASSWORD)
    run = {"environment_id": "gsm8k", "version": "v1", "model": "m", "submission_filename": "p.json"}
    bodies = [
        ("/runs", run),
        ("/preparations", {"environment_id": "gsm8k", "version": "v1", "run_ids": ["run-1"]}),
        ("/preparations/prep-none/packages", {"profile": "openai-chat"}),
        ("/training-runs", {"package_id": "pkg-none", "connection_id": "conn-none"}),
    ]

    with api_cloud.serve_api(access_log=False) as server:

        def post(index: int) -> int | str:
            path, body = bodies[index % len(bodies)]
            try:
                answer = _request(
                    server,
                    "POST",
                    path,
                    headers={"Authorization": token, "Content-Type": "application/json"},
                    body=json.dumps(body).encode(),
                )
            except OSError as error:  # a reset connection: what API Gateway never does to a burst
                return f"{type(error).__name__}: {error}"
            return answer.status

        # when 10 rounds of 20 requests each arrive at once (more than socketserver's backlog of 5)
        outcomes: list[int | str] = []
        for _ in range(10):
            with ThreadPoolExecutor(max_workers=20) as pool:
                outcomes.extend(pool.map(post, range(20)))

    # then every request got an HTTP answer of the API's (none of these exists, so each is refused)
    assert [outcome for outcome in outcomes if not isinstance(outcome, int)] == []
    assert set(outcomes) <= {404, 422}, set(outcomes)


def test_an_answer_over_lambdas_6_mb_response_quota_is_a_502_as_api_gateway_gives_it(pool: Pool) -> None:
    # Given an API function whose answer for one route is 7 MB, and 5 MB for another
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        size = 7_000_000 if event["path"] == "/runs" else 5_000_000
        return {"statusCode": 200, "headers": {}, "body": "x" * size, "isBase64Encoded": False}

    token = pool.tokens("alice")["IdToken"]
    with ApiServer(ROUTES, handler, pool.verifier(), function_name="api") as server:
        # When each is called
        too_large = _request(server, "GET", "/runs", headers={"Authorization": token})
        within = _request(server, "GET", "/runs/latest", headers={"Authorization": token})

    # Then the first is API Gateway's answer to a failed integration, and the second comes back whole
    assert too_large.status == 502
    assert too_large.json() == {"message": "Internal server error"}
    assert (within.status, len(within.body)) == (200, 5_000_000)

"""The REST API: one router per resource, the services a request uses, and who is asking.

A router parses the request, calls the function of :mod:`benchgen.requests` that does it, and answers
with what it returns. The Lambda entry module builds :class:`ApiServices` from the function's adapters
(made once per cold start) and hands it to the resolver with ``app.append_context(services=...)``; routes
receive it (and the caller's identity) through ``Depends``, so tests can hand in their own.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Request
from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent

from benchgen.errors import BenchGenError
from benchgen.ownership import Caller
from benchgen.requests.services import ApiServices


class Unauthenticated(BenchGenError):
    """The request carries no Cognito identity (``requestContext.authorizer.claims.sub``)."""

    def __init__(self) -> None:
        super().__init__("sign in first: the request carries no user identity (Cognito claims.sub)")


def get_services(request: Request) -> ApiServices:
    """The services the handler appended to the resolver's context for this invocation."""
    services = request.context.get("services")
    if not isinstance(services, ApiServices):
        raise RuntimeError("the API handler must call app.append_context(services=...) before app.resolve")
    return services


def _claims(request: Request) -> dict[str, Any]:
    event = request.resolved_event
    return event.request_context.authorizer.claims if isinstance(event, APIGatewayProxyEvent) else {}


def get_owner(request: Request) -> str:
    """The caller's Cognito user id, which API Gateway's authorizer puts in ``claims.sub``."""
    subject = _claims(request).get("sub")
    if not isinstance(subject, str) or not subject:
        raise Unauthenticated()
    return subject


def claimed_groups(value: object) -> frozenset[str]:
    """The groups of a ``cognito:groups`` claim as an authorizer hands it over.

    API Gateway turns the token's list into one string: ``"a,b"`` behind a REST API's Cognito authorizer,
    ``"[a b]"`` behind an HTTP API's JWT authorizer. Group names hold neither commas nor spaces here.
    """
    if isinstance(value, list):
        return frozenset(str(item) for item in value if str(item))
    if not isinstance(value, str):
        return frozenset()
    return frozenset(name for name in re.split(r"[\s,]+", value.strip().strip("[]")) if name)


def get_caller(request: Request) -> Caller:
    """The caller's user id and groups."""
    return Caller(user=get_owner(request), groups=claimed_groups(_claims(request).get("cognito:groups")))


# What a route declares to receive them.
Services = Annotated[ApiServices, Depends(get_services)]
Owner = Annotated[str, Depends(get_owner)]
SignedIn = Annotated[Caller, Depends(get_caller)]

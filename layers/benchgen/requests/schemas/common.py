"""What the bodies of every resource share: the patterns, free text, strict requests, listings."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated

from pydantic import AfterValidator, ConfigDict, Field

from benchgen.lazy_model import LazyModel

IDEMPOTENCY_KEY_PATTERN = r"^[A-Za-z0-9_.:-]{1,255}$"
# Ids in paths and filters (run, dataset, environment as uploaded) and the listings' opaque tokens.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,159}$"
KIND_PATTERN = r"^[a-z][a-z0-9-]{0,31}$"
NEXT_TOKEN_PATTERN = r"^[A-Za-z0-9_-]{1,1024}$"  # noqa: S105  (a pattern, not a secret)
# Free text such as a model name: no control characters, and neither blank nor padded with spaces. The
# ends exclude the characters whose "whitespace" status differs between Python's and ECMA's ``\s``
# (C0/C1 controls, the BOM), so this document and the validator draw the same line.
TEXT_PATTERN = r"^[^\s\x00-\x1f\x7f-\x9f\ufeff](?:[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f\ufeff])?$"
# DynamoDB numbers hold 38 digits between 1e-130 and 1e126: a number a request carries stays well inside,
# within ±1e12 where no narrower bound of its own applies (tests/unit/test_openapi_bounds.py checks that
# every number of every request schema has both ends).
MAX_REQUEST_NUMBER = 10**12


def matching(pattern: str, rule: str) -> Callable[[str], str]:
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(rule)
        return value

    return check


# The pattern is shown in the OpenAPI document; the validator enforces it with a sentence people can act on.
Text = Annotated[
    str,
    Field(json_schema_extra={"pattern": TEXT_PATTERN}),
    AfterValidator(
        matching(TEXT_PATTERN, "must not be blank, start or end with a space, or hold control characters")
    ),
]


class StrictRequest(LazyModel):
    # A misspelt field is an error, not silently ignored. Values are taken as sent (no trimming): what the
    # OpenAPI document calls valid is exactly what is accepted.
    model_config = ConfigDict(extra="forbid")


class Listing(LazyModel):
    """Present on every list: pass ``next_token`` back as a query parameter to get the next page."""

    next_token: str | None = Field(default=None, description="absent on the last page")

"""Request bodies: what the API accepts, and the sentence it gives for what it refuses."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from benchgen.requests.schemas.environments import CreateEnvironmentRequest
from benchgen.requests.schemas.runs import CreateRunRequest

OPENAPI = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def _problem(error: ValidationError) -> tuple[str, str]:
    first = error.errors()[0]
    return ".".join(str(part) for part in first["loc"]), str(
        first["ctx"]["error"]
    ) if "ctx" in first else first["msg"]


@pytest.mark.parametrize("environment_id", ["gsm8k", "squad-v2", "a", "x" * 64])
def test_slug_environment_ids_are_accepted(environment_id: str) -> None:
    assert (
        CreateEnvironmentRequest(environment_id=environment_id, version="1").environment_id == environment_id
    )


@pytest.mark.parametrize("environment_id", ["GSM8K", "gsm 8k", "-gsm", "gsm-", "x" * 65, "", "a/b"])
def test_other_environment_ids_are_refused_with_the_rule(environment_id: str) -> None:
    with pytest.raises(ValidationError) as caught:
        CreateEnvironmentRequest(environment_id=environment_id, version="1")
    assert _problem(caught.value) == (
        "environment_id",
        "must be 1-64 lowercase letters, digits and '-', starting and ending with a letter or digit",
    )


@pytest.mark.parametrize("version", ["1", "2026.06", "v1_rc-2"])
def test_versions_with_dots_and_dashes_are_accepted(version: str) -> None:
    assert CreateEnvironmentRequest(environment_id="gsm8k", version=version).version == version


@pytest.mark.parametrize("version", ["1/2", ".1", "1.", "a" * 33])
def test_versions_that_would_break_a_key_are_refused(version: str) -> None:
    with pytest.raises(ValidationError) as caught:
        CreateEnvironmentRequest(environment_id="gsm8k", version=version)
    assert _problem(caught.value)[0] == "version"


@pytest.mark.parametrize("filename", ["predictions.zip", "predictions.json", "p_1-final.jsonl"])
def test_submission_filenames_of_the_three_kinds_are_accepted(filename: str) -> None:
    request = CreateRunRequest(environment_id="gsm8k", version="1", model="m", filename=filename)
    assert request.filename == filename


@pytest.mark.parametrize("filename", ["../p.zip", "p.tar.gz", "p zip.zip", ".zip", "p.ZIP", "dir/p.json"])
def test_other_submission_filenames_are_refused_with_the_rule(filename: str) -> None:
    with pytest.raises(ValidationError) as caught:
        CreateRunRequest(environment_id="gsm8k", version="1", model="m", filename=filename)
    assert _problem(caught.value) == (
        "filename",
        "must be letters, digits, '.', '_' and '-' only, ending in .json, .jsonl or .zip",
    )


def test_a_misspelt_field_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        CreateRunRequest.model_validate(
            {"environment_id": "gsm8k", "version": "1", "model": "m", "fase": "x"}
        )
    assert [error["loc"] for error in caught.value.errors()] == [("fase",)]


def _accepts(model: str) -> bool:
    try:
        CreateRunRequest(environment_id="gsm8k", version="1", model=model)
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize(
    "model",
    [
        "qwen",
        "Qwen 2.5 7B",
        "é",
        "   ",
        "",
        " qwen",
        "qwen ",
        "\tqwen",
        "qwen\n",
        "\u00a0",
        "q\u0085",
        "\ufeffq",
        "a\x00b",
    ],
)
def test_the_document_and_the_validator_agree_on_model_names(model: str) -> None:
    # The checked-in OpenAPI document is what clients (and schemathesis) validate against; fullmatch,
    # because ECMA's "$" (unlike Python's search) does not match before a final newline.
    document = json.loads(OPENAPI.read_text(encoding="utf-8"))
    rule = document["components"]["schemas"]["CreateRunRequest"]["properties"]["model"]
    documented = rule["minLength"] <= len(model) <= rule["maxLength"] and re.fullmatch(rule["pattern"], model)
    assert _accepts(model) == bool(documented)


def test_a_blank_model_name_is_refused_not_trimmed() -> None:
    assert not _accepts("   ")
    assert not _accepts("  qwen ")

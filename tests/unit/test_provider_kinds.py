"""Provider kinds are each defined in their own modules, found by name: nothing else in the code names a
kind, and a kind registered the documented way (here a throwaway one) is listed, validated, described
to the API and checked like the others."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from importlib import import_module
from pathlib import Path

import pytest
from pydantic import ValidationError

from benchgen.aws.providers.registry import adapter
from benchgen.errors import Unsupported
from benchgen.providers import registry
from benchgen.providers.checks import check_request, narrow
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.definition import ProviderDefinition
from benchgen.vocabulary import PROVIDER_KINDS, Method, ProviderKind
from tests.throwaway import registered

ROOT = Path(__file__).resolve().parents[2]
# The code a kind could be named in: the library, the handlers, the CDK app, the local cloud and the example
# generator. The command line (cli/) is left out: it drives the application as a user does, choosing kinds
# by name.
CODE = [ROOT / "layers", ROOT / "functions", ROOT / "infra", ROOT / "localcloud", ROOT / "examplegen"]
PACKAGES = ("benchgen.providers", "benchgen.aws.providers", "localcloud.providers")
# The openai-compatible kind's local fake (its Together-style fine-tunes) is served by the example model
# server, which speaks that kind's API for the examples and the demo.
SERVED_BY = {"openai-compatible": {ROOT / "localcloud" / "model_server.py"}}


@pytest.fixture
def throwaway() -> Iterator[ProviderDefinition]:
    with registered() as definition:
        yield definition


def _own_files(kind: str) -> set[Path]:
    module = ProviderKind(kind).module
    # A kind's batch inference, where it has one, is in the module its definition names.
    batch = registry.provider(kind).batch_module
    batch_files = {ROOT / "layers" / "benchgen" / "providers" / f"{batch}.py"} if batch else set()
    return batch_files | {
        ROOT / "layers" / "benchgen" / "providers" / f"{module}.py",
        ROOT / "layers" / "benchgen" / "aws" / "providers" / f"{module}.py",
        ROOT / "localcloud" / "providers" / f"{module}.py",
        ROOT / "layers" / "benchgen" / "vocabulary.py",
        *SERVED_BY.get(kind, set()),
    }


def _names_kind(tree: ast.AST, kind: str) -> bool:
    """Whether the code writes ``kind``'s name or imports one of its modules."""
    module = ProviderKind(kind).module
    own_modules = {f"{package}.{module}" for package in PACKAGES}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value == kind:
            return True
        if isinstance(node, ast.Import) and any(alias.name in own_modules for alias in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.module in own_modules:
                return True
            if node.module in PACKAGES and any(alias.name == module for alias in node.names):
                return True
    return False


def _code_files() -> Iterator[Path]:
    for root in CODE:
        yield from sorted(root.rglob("*.py"))


@pytest.mark.parametrize("kind", PROVIDER_KINDS)
def test_a_kind_is_named_only_by_its_module_its_adapter_its_local_fake_and_the_list_of_kinds(
    kind: str,
) -> None:
    # Given every file of the code / When the ones that name the kind or import its modules are found
    naming = {
        path for path in _code_files() if _names_kind(ast.parse(path.read_text(encoding="utf-8")), kind)
    }
    # Then they are the four files adding the kind takes, and no other module branches on it
    assert naming <= _own_files(kind), sorted(
        str(path.relative_to(ROOT)) for path in naming - _own_files(kind)
    )


@pytest.mark.parametrize("kind", PROVIDER_KINDS)
def test_every_kind_has_its_definition_adapter_and_local_fake(kind: str) -> None:
    definition = registry.provider(kind)
    assert definition.kind == kind
    found = adapter(kind)
    assert callable(found.training_jobs) and callable(found.model)
    assert callable(import_module(f"localcloud.providers.{ProviderKind(kind).module}").patches)


def test_the_kinds_are_listed_in_the_order_of_the_list_of_kinds() -> None:
    assert [definition.kind for definition in registry.providers()] == list(PROVIDER_KINDS)


def test_a_name_that_is_no_kind_is_refused_naming_the_kinds() -> None:
    with pytest.raises(ValueError, match=r"'nope' is not a provider kind: the kinds are bedrock, sagemaker"):
        ProviderKind("nope")


def test_a_registered_kind_is_listed_and_its_name_validates(throwaway: ProviderDefinition) -> None:
    assert [definition.kind for definition in registry.providers()][-1] == "throwaway"
    assert registry.provider("throwaway") is throwaway
    record = ConnectionRecord(
        connection_id="conn-1",
        owner="user-a",
        name="throwaway",
        provider="throwaway",
        region="us-east-1",
        profile=narrow(throwaway.kind, None),
    )
    assert record.profile == throwaway.capabilities


def test_a_kind_is_gone_once_its_registration_ends() -> None:
    with registered():
        pass
    assert "throwaway" not in [definition.kind for definition in registry.providers()]
    with pytest.raises(ValueError, match="'throwaway' is not a provider kind"):
        ProviderKind("throwaway")


def test_a_registered_kind_is_an_enum_value_of_the_api_document(throwaway: ProviderDefinition) -> None:
    from benchgen.api.openapi import render

    schema = json.loads(render())["components"]["schemas"]["ProviderKind"]
    assert schema["enum"] == [*PROVIDER_KINDS, "throwaway"]


def test_a_registered_kinds_connection_fields_are_its_own(throwaway: ProviderDefinition) -> None:
    with pytest.raises(ValidationError, match="a throwaway connection needs its region"):
        ConnectionRecord(
            connection_id="c",
            owner="u",
            name="n",
            provider="throwaway",
            profile=throwaway.capabilities,
        )
    with pytest.raises(
        ValidationError, match=r"a throwaway connection takes no base_url \(openai-compatible only\)"
    ):
        ConnectionRecord(
            connection_id="c",
            owner="u",
            name="n",
            provider="throwaway",
            region="us-east-1",
            base_url="https://x.example/v1",
            profile=throwaway.capabilities,
        )


def test_a_request_outside_a_registered_kinds_profile_is_refused_with_its_sentence(
    throwaway: ProviderDefinition,
) -> None:
    connection = ConnectionRecord(
        connection_id="c",
        owner="u",
        name="n",
        provider=throwaway.kind,
        region="us-east-1",
        profile=narrow(throwaway.kind, None),
    )
    with pytest.raises(Unsupported) as refused:
        check_request(connection, method=Method.PREFERENCE)
    assert str(refused.value) == (
        f"{throwaway.method_gaps[Method.PREFERENCE]}: preference training needs a sagemaker or "
        "openai-compatible connection; this connection accepts demonstration"
    )
    with pytest.raises(Unsupported, match=r"^Throwaway training fine-tunes only Qwen models, and base model"):
        check_request(connection, base_model="amazon.nova-micro-v1:0")


def test_the_provider_clock_installs_a_registered_kinds_local_fake(throwaway: ProviderDefinition) -> None:
    from localcloud.provider_clock import ProviderClock
    from tests.throwaway import local_fake

    with ProviderClock() as clock:
        assert local_fake.INSTALLED[-1] is clock

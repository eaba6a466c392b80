"""Connection profiles: what each provider can do, narrowing, and every refusal of check_request."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from benchgen.errors import Unsupported
from benchgen.providers import registry
from benchgen.providers.capabilities import (
    ConnectionLimits,
    ConnectionProfile,
    family_matches,
)
from benchgen.providers.checks import check_request, narrow
from benchgen.providers.connections import ConnectionRecord
from benchgen.training.export_profiles import PROFILES
from benchgen.vocabulary import PROVIDER_KINDS, Method, ProviderKind

BEDROCK = ProviderKind("bedrock")
SAGEMAKER = ProviderKind("sagemaker")
OPENAI_COMPATIBLE = ProviderKind("openai-compatible")

SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:together-key-AbCdEf"


def connection(
    provider: ProviderKind, profile: ConnectionProfile | None = None, **fields: Any
) -> ConnectionRecord:
    where: dict[str, Any] = (
        {"base_url": "https://api.together.xyz/v1"}
        if provider == OPENAI_COMPATIBLE
        else {"region": "us-east-1"}
    )
    return ConnectionRecord(
        connection_id="conn-1",
        owner="user-a",
        name="my connection",
        provider=provider,
        profile=narrow(provider, profile),
        **(where | fields),
    )


def test_preference_training_on_bedrock_is_refused_naming_who_offers_it_and_what_this_accepts() -> None:
    bedrock = connection(BEDROCK)
    with pytest.raises(Unsupported) as refused:
        check_request(bedrock, method=Method.PREFERENCE)
    assert str(refused.value) == (
        "Bedrock model customization has no preference type: preference training needs a sagemaker or "
        "openai-compatible connection; this connection accepts demonstration"
    )


@pytest.mark.parametrize(
    ("provider", "gap", "accepts"),
    [
        (
            BEDROCK,
            "BenchGen does not start Bedrock reinforcement fine-tuning, whose grader is a Lambda function in "
            "your account: download the bedrock-rft package, deploy its grader.py as that Lambda and start "
            "the job with customizationType REINFORCEMENT_FINE_TUNING",
            "demonstration",
        ),
        (
            SAGEMAKER,
            "SageMaker serverless customization offers SFT and DPO techniques only: download the trl-grpo "
            "package to train it with GRPO on your own instances",
            "demonstration, preference",
        ),
    ],
)
def test_reinforcement_training_is_refused_where_the_provider_does_not_offer_it(
    provider: ProviderKind, gap: str, accepts: str
) -> None:
    with pytest.raises(Unsupported) as refused:
        check_request(connection(provider), method=Method.REINFORCEMENT)
    message = str(refused.value)
    assert message.startswith(f"{gap}: reinforcement training ")
    assert message.endswith(f"; this connection accepts {accepts}")


@pytest.mark.parametrize("provider", [SAGEMAKER, OPENAI_COMPATIBLE])
def test_preference_training_is_accepted_where_the_provider_offers_it(provider: ProviderKind) -> None:
    check_request(connection(provider, endpoint_name=None), method=Method.PREFERENCE)


def test_every_export_profile_a_provider_names_exists_and_fits_its_methods() -> None:
    for capability in (definition.capabilities for definition in registry.providers()):
        for profile_id in capability.export_profiles:
            assert PROFILES[profile_id].methods <= set(capability.methods)


def test_a_format_the_provider_does_not_read_is_refused_naming_who_reads_it() -> None:
    with pytest.raises(Unsupported) as refused:
        check_request(connection(BEDROCK), export_profile="openai-chat")
    assert str(refused.value) == (
        "Bedrock model customization does not read openai-chat files: openai-chat needs an openai-compatible "
        "connection; this connection accepts bedrock-conversation, bedrock-prompt-completion"
    )


def test_an_unknown_export_profile_is_refused_listing_the_accepted_ones() -> None:
    with pytest.raises(Unsupported, match="no export profile 'csv': this connection accepts sagemaker-sft, "):
        check_request(connection(SAGEMAKER), export_profile="csv")


def test_a_format_of_the_other_method_is_refused_naming_the_formats_for_this_method() -> None:
    with pytest.raises(Unsupported) as refused:
        check_request(connection(SAGEMAKER), method=Method.PREFERENCE, export_profile="trl-sft")
    assert str(refused.value) == (
        "export profile trl-sft holds demonstration rows, not preference: for preference this connection "
        "accepts sagemaker-dpo, trl-dpo"
    )


def test_a_base_model_bedrock_cannot_customize_is_refused_naming_the_families() -> None:
    with pytest.raises(Unsupported) as refused:
        check_request(connection(BEDROCK), base_model="mistral.mistral-large-2402-v1:0")
    assert str(refused.value) == (
        "Bedrock model customization fine-tunes only Nova, Llama 3.1 and Claude 3 Haiku models, and base "
        "model mistral.mistral-large-2402-v1:0 is none of them: this connection accepts nova, llama3.1, "
        "claude-3-haiku"
    )


@pytest.mark.parametrize(
    ("base_model", "family"),
    [
        ("amazon.nova-lite-v1:0", "nova"),
        ("amazon.nova-2-lite-v1:0", "nova"),
        ("meta.llama3-1-8b-instruct-v1:0", "llama3.1"),
        ("anthropic.claude-3-haiku-20240307-v1:0", "claude-3-haiku"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama3.1"),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen"),
    ],
)
def test_base_models_are_recognised_by_family(base_model: str, family: str) -> None:
    assert family_matches(family, base_model)
    assert not family_matches("nova", "meta.llama3-1-8b-instruct-v1:0")


def test_a_connection_narrowed_to_nova_refuses_llama_saying_its_profile_leaves_it_out() -> None:
    nova_only = ConnectionProfile(
        methods=[Method.DEMONSTRATION], model_families=["nova"], export_profiles=["bedrock-conversation"]
    )
    bedrock = connection(BEDROCK, nova_only)
    check_request(bedrock, base_model="amazon.nova-micro-v1:0", export_profile="bedrock-conversation")
    with pytest.raises(Unsupported) as refused:
        check_request(bedrock, base_model="meta.llama3-1-70b-instruct-v1:0")
    assert str(refused.value) == (
        "base model meta.llama3-1-70b-instruct-v1:0 is of a family this connection's profile leaves out: "
        "it accepts nova"
    )


def test_a_method_the_connection_narrowed_away_is_refused_naming_what_it_keeps() -> None:
    sft_only = ConnectionProfile(
        methods=[Method.DEMONSTRATION], model_families=["*"], export_profiles=["openai-chat"]
    )
    together = connection(OPENAI_COMPATIBLE, sft_only)
    with pytest.raises(Unsupported) as refused:
        check_request(together, method=Method.PREFERENCE)
    assert str(refused.value) == (
        "this connection's profile leaves out preference training (its provider offers it): this connection "
        "accepts demonstration; use an openai-compatible connection whose profile includes preference"
    )
    with pytest.raises(Unsupported, match=r"leaves out export profile together-sft .*accepts openai-chat$"):
        check_request(together, export_profile="together-sft")


def test_widening_a_bedrock_profile_is_refused_naming_each_thing_and_why() -> None:
    wider = ConnectionProfile(
        methods=[Method.DEMONSTRATION, Method.PREFERENCE],
        model_families=["nova", "qwen"],
        export_profiles=["bedrock-conversation", "sagemaker-dpo"],
        limits=ConnectionLimits(max_rows=50_000),
    )
    with pytest.raises(Unsupported) as refused:
        narrow(BEDROCK, wider)
    message = str(refused.value)
    assert message.startswith(
        "a bedrock connection's profile may only narrow what its provider can do, and this one asks for "
        "preference training (Bedrock model customization has no preference type); export profile "
        "sagemaker-dpo (Bedrock model customization does not read its files); model family qwen (Bedrock "
        "model customization fine-tunes only Nova, Llama 3.1 and Claude 3 Haiku models); max_rows 50000 "
        "(Bedrock model customization takes at most 20000)."
    )
    assert message.endswith(
        "A bedrock connection accepts methods demonstration, model families nova, llama3.1, claude-3-haiku, "
        "export profiles bedrock-conversation, bedrock-prompt-completion: narrow the profile to those, or "
        "leave it out to take them all"
    )


def test_asking_any_family_of_bedrock_is_widening() -> None:
    anything = ConnectionProfile(
        methods=[Method.DEMONSTRATION], model_families=["*"], export_profiles=["bedrock-conversation"]
    )
    with pytest.raises(Unsupported, match=r"model family \* \(Bedrock model customization fine-tunes only"):
        narrow(BEDROCK, anything)


def test_a_narrower_profile_is_kept_and_inherits_the_provider_limit_it_leaves_unset() -> None:
    narrower = ConnectionProfile(
        methods=[Method.DEMONSTRATION],
        model_families=["llama3.1"],
        export_profiles=["bedrock-prompt-completion"],
        limits=ConnectionLimits(max_row_tokens=8000),
    )
    kept = narrow(BEDROCK, narrower)
    assert kept.model_families == ["llama3.1"]
    assert kept.limits == ConnectionLimits(max_rows=20_000, max_row_tokens=8000)


def test_no_profile_takes_the_providers_whole_capabilities() -> None:
    assert narrow(SAGEMAKER, None) == registry.provider(SAGEMAKER).capabilities


def test_more_rows_than_the_limit_are_refused_with_the_limit() -> None:
    small = ConnectionProfile(
        methods=[Method.DEMONSTRATION],
        model_families=["*"],
        export_profiles=["trl-sft"],
        limits=ConnectionLimits(max_rows=500, max_row_tokens=1000),
    )
    sagemaker = connection(SAGEMAKER, small)
    check_request(sagemaker, rows=500, row_tokens=1000)
    with pytest.raises(
        Unsupported, match=r"^501 training rows are more than this connection accepts \(at most 500\)"
    ):
        check_request(sagemaker, rows=501)
    with pytest.raises(Unsupported, match=r"^rows of about 1001 tokens are longer .*\(at most 1000\)"):
        check_request(sagemaker, row_tokens=1001)


def test_a_sagemaker_connection_without_an_endpoint_cannot_answer_live_runs() -> None:
    with pytest.raises(Unsupported) as refused:
        check_request(connection(SAGEMAKER), inference=True)
    assert str(refused.value) == (
        "this sagemaker connection names no endpoint, and live runs on SageMaker call a SageMaker endpoint "
        "(InvokeEndpoint): create a sagemaker connection with endpoint_name, or use a bedrock or "
        "openai-compatible connection"
    )
    check_request(connection(SAGEMAKER, endpoint_name="tgi-qwen"), inference=True)


@pytest.mark.parametrize("provider", [BEDROCK, OPENAI_COMPATIBLE])
def test_bedrock_and_openai_compatible_connections_answer_live_runs(provider: ProviderKind) -> None:
    check_request(connection(provider), inference=True)


def test_a_profile_whose_formats_fit_none_of_its_methods_is_invalid() -> None:
    with pytest.raises(
        ValidationError, match="export profile openai-preference holds preference rows, which"
    ):
        ConnectionProfile(
            methods=[Method.DEMONSTRATION], model_families=["*"], export_profiles=["openai-preference"]
        )


def test_a_profile_naming_an_unknown_export_profile_is_invalid() -> None:
    with pytest.raises(
        ValidationError, match="no export profile 'jsonl': the export profiles are openai-chat"
    ):
        ConnectionProfile(methods=[Method.DEMONSTRATION], model_families=["*"], export_profiles=["jsonl"])


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"provider": "bedrock"}, "a bedrock connection needs its region"),
        ({"provider": "openai-compatible"}, "an openai-compatible connection needs base_url"),
        (
            {"provider": "openai-compatible", "base_url": "http://api.together.xyz/v1"},
            "base_url must use https",
        ),
        (
            {"provider": "openai-compatible", "base_url": "https://api.example.com/v1?api_key=sk-1"},
            "put an API key in AWS Secrets Manager",
        ),
        (
            {"provider": "openai-compatible", "base_url": "https://me:sk-1@api.example.com/v1"},
            "base_url must hold no user name, password",
        ),
        (
            {"provider": "openai-compatible", "base_url": "https://x.example/v1", "region": "us-east-1"},
            "an openai-compatible connection takes no region",
        ),
        (
            {"provider": "bedrock", "region": "us-east-1", "endpoint_name": "e"},
            "endpoint_name belongs to sagemaker",
        ),
        ({"provider": "sagemaker", "region": "us-east-1", "secret_arn": "sk-live-123"}, "secret_arn"),
    ],
)
def test_a_connection_that_does_not_fit_its_provider_is_invalid(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ConnectionRecord(
            connection_id="c",
            owner="u",
            name="n",
            profile=registry.provider(fields["provider"]).capabilities,
            **fields,
        )


@pytest.mark.parametrize(
    "base_url", ["http://127.0.0.1:8765/v1", "http://localhost:8000/v1", "http://[::1]:80/v1"]
)
def test_plain_http_is_accepted_on_loopback_only(base_url: str) -> None:
    assert connection(OPENAI_COMPATIBLE, base_url=base_url, secret_arn=SECRET_ARN).base_url == base_url


_FAMILIES = ["*", "nova", "llama3.1", "claude-3-haiku", "qwen", "mistral"]


@st.composite
def profiles(draw: st.DrawFn) -> ConnectionProfile:
    """Any consistent profile: some methods, families, and export profiles of those methods, and limits."""
    packaged = [method for method in Method if any(method in p.methods for p in PROFILES.values())]
    methods = draw(st.lists(st.sampled_from(packaged), min_size=1, unique=True))
    formats = [profile_id for profile_id, profile in PROFILES.items() if profile.methods & set(methods)]
    return ConnectionProfile(
        methods=methods,
        model_families=draw(st.lists(st.sampled_from(_FAMILIES), min_size=1, max_size=3, unique=True)),
        export_profiles=draw(st.lists(st.sampled_from(formats), min_size=1, max_size=4, unique=True)),
        limits=ConnectionLimits(
            max_rows=draw(st.none() | st.integers(1, 40_000)),
            max_row_tokens=draw(st.none() | st.integers(1, 40_000)),
        ),
    )


def _within(provider: ProviderKind, profile: ConnectionProfile) -> bool:
    capability = registry.provider(provider).capabilities
    families_fit = "*" in capability.model_families or set(profile.model_families) <= set(
        capability.model_families
    )
    rows_fit = (
        capability.limits.max_rows is None
        or profile.limits.max_rows is None
        or profile.limits.max_rows <= capability.limits.max_rows
    )
    return (
        set(profile.methods) <= set(capability.methods)
        and set(profile.export_profiles) <= set(capability.export_profiles)
        and families_fit
        and rows_fit
    )


@settings(max_examples=300, deadline=None)
@given(provider=st.sampled_from([ProviderKind(kind) for kind in PROVIDER_KINDS]), requested=profiles())
def test_a_profile_is_kept_exactly_when_it_stays_within_its_provider(
    provider: ProviderKind, requested: ConnectionProfile
) -> None:
    if not _within(provider, requested):
        with pytest.raises(Unsupported, match="may only narrow what its provider can do"):
            narrow(provider, requested)
        return
    kept = narrow(provider, requested)
    assert (kept.methods, kept.model_families, kept.export_profiles) == (
        requested.methods,
        requested.model_families,
        requested.export_profiles,
    )
    # and the connection it makes refuses everything its provider cannot do
    made = connection(provider, requested, endpoint_name=None)
    for method in Method:
        if method not in registry.provider(provider).capabilities.methods:
            with pytest.raises(Unsupported):
                check_request(made, method=method)

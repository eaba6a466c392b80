"""Provider jobs, the pure part: job names, status maps, and the hyperparameter check."""

from __future__ import annotations

import re

import pytest
from botocore.session import Session
from hypothesis import given
from hypothesis import strategies as st

from benchgen.errors import Unsupported
from benchgen.providers import bedrock, openai_compatible, registry
from benchgen.providers.hyperparameters import Hyperparameter, Hyperparameters, typed
from benchgen.providers.jobs import job_name_for
from benchgen.records.training_runs import TrainingStatus
from benchgen.vocabulary import ProviderKind

BEDROCK = ProviderKind("bedrock")
SAGEMAKER = ProviderKind("sagemaker")
OPENAI_COMPATIBLE = ProviderKind("openai-compatible")


def _pattern(service: str, operation: str, member: str) -> str:
    shape = Session().get_service_model(service).operation_model(operation).input_shape
    return str(shape.members[member].metadata["pattern"])


BEDROCK_JOB_NAME = _pattern("bedrock", "CreateModelCustomizationJob", "jobName")
SAGEMAKER_JOB_NAME = _pattern("sagemaker", "CreateTrainingJob", "TrainingJobName")
# The custom model takes the job's name too.
BEDROCK_MODEL_NAME = _pattern("bedrock", "CreateModelCustomizationJob", "customModelName")

NOVA = "amazon.nova-micro-v1:0:128k"
LLAMA = "meta.llama3-1-8b-instruct-v1:0"
HAIKU = "anthropic.claude-3-haiku-20240307-v1:0:200k"


def test_a_training_run_id_gives_a_readable_job_name_that_fits_a_together_suffix() -> None:
    name = job_name_for("train-0123456789abcdef01234567")
    assert name == "benchgen-train-0123456789abcdef01234567"
    assert len(name) <= 40


@given(st.text(min_size=0, max_size=200))
def test_any_id_gives_the_same_name_every_time_and_both_aws_services_accept_it_as_job_and_model_name(
    run_id: str,
) -> None:
    name = job_name_for(run_id)
    assert name == job_name_for(run_id)
    assert len(name) <= 63
    assert re.fullmatch(BEDROCK_JOB_NAME, name)
    assert re.fullmatch(SAGEMAKER_JOB_NAME, name)
    assert re.fullmatch(BEDROCK_MODEL_NAME, name)


def test_different_ids_that_clean_to_the_same_text_get_different_names() -> None:
    assert job_name_for("train_1") != job_name_for("train-1")


@pytest.mark.parametrize(
    ("provider", "value", "status"),
    [
        (BEDROCK, "InProgress", TrainingStatus.RUNNING),
        (BEDROCK, "Completed", TrainingStatus.SUCCEEDED),
        (BEDROCK, "Failed", TrainingStatus.FAILED),
        (BEDROCK, "Stopping", TrainingStatus.RUNNING),
        (BEDROCK, "Stopped", TrainingStatus.CANCELLED),
        (SAGEMAKER, "InProgress", TrainingStatus.RUNNING),
        (SAGEMAKER, "Completed", TrainingStatus.SUCCEEDED),
        (SAGEMAKER, "Failed", TrainingStatus.FAILED),
        (SAGEMAKER, "Stopping", TrainingStatus.RUNNING),
        (SAGEMAKER, "Stopped", TrainingStatus.CANCELLED),
        (SAGEMAKER, "Deleting", TrainingStatus.CANCELLED),
        (OPENAI_COMPATIBLE, "pending", TrainingStatus.QUEUED),
        (OPENAI_COMPATIBLE, "queued", TrainingStatus.QUEUED),
        (OPENAI_COMPATIBLE, "running", TrainingStatus.RUNNING),
        (OPENAI_COMPATIBLE, "compressing", TrainingStatus.RUNNING),
        (OPENAI_COMPATIBLE, "uploading", TrainingStatus.RUNNING),
        (OPENAI_COMPATIBLE, "cancel_requested", TrainingStatus.RUNNING),
        (OPENAI_COMPATIBLE, "cancelled", TrainingStatus.CANCELLED),
        (OPENAI_COMPATIBLE, "error", TrainingStatus.FAILED),
        (OPENAI_COMPATIBLE, "completed", TrainingStatus.SUCCEEDED),
        (OPENAI_COMPATIBLE, "Completed", TrainingStatus.SUCCEEDED),
        (OPENAI_COMPATIBLE, "succeeded", TrainingStatus.SUCCEEDED),
    ],
)
def test_each_documented_provider_status_maps_to_ours(
    provider: ProviderKind, value: str, status: TrainingStatus
) -> None:
    assert registry.provider(provider).status(value) is status
    assert registry.provider(provider).status_note(value) is None


def test_an_unknown_provider_status_counts_as_running_and_the_timeline_says_why() -> None:
    assert registry.provider("openai-compatible").status("warming_up") is TrainingStatus.RUNNING
    assert registry.provider("openai-compatible").status_note("warming_up") == (
        "openai-compatible reported status 'warming_up', which BenchGen does not know: counted as still "
        "running until the provider reports an end"
    )


def test_nova_hyperparameters_are_checked_and_written_as_strings() -> None:
    checked = registry.provider("bedrock").check_hyperparameters(
        NOVA, {"epochCount": 3, "learningRate": 0.00001, "learningRateWarmupSteps": "5"}
    )
    assert checked == {"epochCount": "3", "learningRate": "1e-05", "learningRateWarmupSteps": "5"}


def test_a_nova_epoch_count_beyond_five_is_refused_naming_every_accepted_name_and_range() -> None:
    with pytest.raises(Unsupported) as refused:
        registry.provider("bedrock").check_hyperparameters(NOVA, {"epochCount": 6, "batchSize": 8})
    assert str(refused.value) == (
        "epochCount=6 is outside epochCount (integer from 1 to 5); batchSize is not one of its "
        f"hyperparameters. For base model {NOVA} bedrock accepts: epochCount (integer from 1 to 5); "
        "learningRate (number from 1e-06 to 0.0001); learningRateWarmupSteps (integer from 0 to 100): fix "
        "the hyperparameters, or leave them out to take the provider's defaults"
    )


def test_llama_takes_ten_epochs_and_a_batch_size_of_one_only() -> None:
    assert registry.provider("bedrock").check_hyperparameters(LLAMA, {"epochCount": 10, "batchSize": 1}) == {
        "epochCount": "10",
        "batchSize": "1",
    }
    with pytest.raises(Unsupported, match=r"batchSize=2 is outside batchSize \(integer, only 1\)"):
        registry.provider("bedrock").check_hyperparameters(LLAMA, {"batchSize": 2})


def test_claude_haiku_takes_a_learning_rate_multiplier_and_early_stopping() -> None:
    checked = registry.provider("bedrock").check_hyperparameters(
        HAIKU,
        {"learningRateMultiplier": 1.5, "batchSize": 32, "earlyStoppingEnabled": "True"},
    )
    assert checked == {"learningRateMultiplier": "1.5", "batchSize": "32", "earlyStoppingEnabled": "true"}


@pytest.mark.parametrize("value", [2.5, "two", float("nan"), True, "1e400"])
def test_a_value_that_is_not_a_whole_number_in_range_is_refused(value: object) -> None:
    with pytest.raises(Unsupported, match=r"epochCount="):
        registry.provider("bedrock").check_hyperparameters(NOVA, {"epochCount": value})  # type: ignore[dict-item]


def test_a_bedrock_base_model_of_no_documented_family_is_refused_naming_the_families() -> None:
    with pytest.raises(Unsupported) as refused:
        registry.provider("bedrock").check_hyperparameters("example-base", {"epochCount": 1})
    assert str(refused.value).startswith(
        "Bedrock model customization documents hyperparameters only for nova, llama3.1, claude-3-haiku models"
    )


def test_openai_compatible_fields_come_back_typed_for_the_request_body() -> None:
    checked = registry.provider("openai-compatible").check_hyperparameters(
        "any-model", {"n_epochs": "2", "learning_rate": 1e-5, "dpo_beta": 0.1}
    )
    assert checked == {"n_epochs": "2", "learning_rate": "1e-05", "dpo_beta": "0.1"}
    assert typed(openai_compatible.HYPERPARAMETERS, checked) == {
        "n_epochs": 2,
        "learning_rate": 1e-05,
        "dpo_beta": 0.1,
    }


def test_sagemaker_takes_the_recipe_s_names_as_text_within_its_map_limits() -> None:
    model = "meta-textgeneration-llama-3-1-8b"
    assert registry.provider("sagemaker").check_hyperparameters(model, {"epochs": 2, "use_lora": True}) == {
        "epochs": "2",
        "use_lora": "true",
    }
    with pytest.raises(Unsupported, match=r"^notes's value is longer than 2500 characters: SageMaker takes"):
        registry.provider("sagemaker").check_hyperparameters(model, {"notes": "x" * 2501})
    with pytest.raises(Unsupported, match=r"^101 hyperparameters are more than the 100 it takes"):
        registry.provider("sagemaker").check_hyperparameters(model, {f"h{index}": 1 for index in range(101)})


def test_a_together_field_without_a_documented_bound_is_checked_only_against_its_meaning() -> None:
    assert registry.provider("openai-compatible").check_hyperparameters("any-model", {"n_epochs": 40}) == {
        "n_epochs": "40"
    }
    with pytest.raises(Unsupported, match=r"n_epochs=0 is outside n_epochs \(integer from 1\)"):
        registry.provider("openai-compatible").check_hyperparameters("any-model", {"n_epochs": 0})


# Each documented table, with a base model it is the table of.
TABLES: list[tuple[str, str, Hyperparameters]] = [
    ("bedrock", NOVA, bedrock.HYPERPARAMETERS["nova"]),
    ("bedrock", LLAMA, bedrock.HYPERPARAMETERS["llama3.1"]),
    ("bedrock", HAIKU, bedrock.HYPERPARAMETERS["claude-3-haiku"]),
    ("openai-compatible", "any-model", openai_compatible.HYPERPARAMETERS),
]
DOCUMENTED = [
    (provider, model, name, spec, table) for provider, model, table in TABLES for name, spec in table.items()
]


@pytest.mark.parametrize(("provider", "model", "name", "spec", "table"), DOCUMENTED)
# 0, or a share far above DynamoDB's smallest magnitude, so that low + share * (high - low) stays storable
@given(share=st.just(0.0) | st.floats(min_value=1e-100, max_value=1))
def test_every_documented_value_in_range_is_accepted_and_reads_back_as_itself(
    provider: str, model: str, name: str, spec: Hyperparameter, table: Hyperparameters, share: float
) -> None:
    if spec.kind is bool:
        value: bool | int | float = share < 0.5
    else:
        assert spec.low is not None
        # Where no upper bound is documented, values up to a thousand above the lowest stand in.
        high = spec.high if spec.high is not None else spec.low + 1000
        value = spec.low + share * (high - spec.low)
        value = round(value) if spec.kind is int else value
    checked = registry.provider(provider).check_hyperparameters(model, {name: value})
    assert typed(table, checked) == {name: value}

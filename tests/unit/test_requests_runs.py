"""What ``/runs`` does, on the in-memory fakes: a run is created from a registered version (or its live
model asked), once per Idempotency-Key, and read back as its page, files and owner-only configuration."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.outputs import RunOutput
from benchgen.providers import registry
from benchgen.providers.connections import ConnectionRecord
from benchgen.records.environments import EnvironmentRecord, EnvironmentStatus
from benchgen.records.runs import RunRecord, RunStatus
from benchgen.requests.errors import Conflict, Forbidden, NotFound, Unprocessable
from benchgen.requests.runs import create_run, detailed_results, list_runs, run_config, run_files
from benchgen.requests.schemas.runs import CreateRunRequest
from benchgen.vocabulary import ProviderKind
from tests.api_services import TTL, Events, memory_services
from tests.fakes import MemoryConnections, MemoryEnvironments, MemoryRuns, MemoryStarter, MemoryStore

# Answered outside Lambda, a create request has no deadline to hold its Idempotency-Key until, as powertools
# warns: the key is held for the whole window instead.
pytestmark = pytest.mark.filterwarnings("ignore:Couldn't determine the remaining time left:UserWarning")

SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:benchgen/together-AbCdEf"


def _environment(
    status: EnvironmentStatus = EnvironmentStatus.REGISTERED, **fields: Any
) -> EnvironmentRecord:
    return EnvironmentRecord(
        environment_id="gsm8k",
        version="1",
        status=status,
        bundle_key="environments/gsm8k/1/bundle.zip",
        **fields,
    )


def _request(**fields: Any) -> CreateRunRequest:
    return CreateRunRequest.model_validate(
        {"environment_id": "gsm8k", "version": "1", "model": "m", **fields}
    )


def _connection(owner: str = "alice") -> ConnectionRecord:
    return ConnectionRecord.model_validate(
        {
            "connection_id": "conn-1",
            "owner": owner,
            "name": "together",
            "provider": ProviderKind("openai-compatible"),
            "base_url": "https://api.together.xyz/v1",
            "secret_arn": SECRET_ARN,
            "profile": registry.provider(ProviderKind("openai-compatible")).capabilities,
        }
    )


def _run(run_id: str = "r1", **fields: Any) -> RunRecord:
    return RunRecord(
        run_id=run_id, environment_id="gsm8k", environment_version="1", model="m", owner="alice", **fields
    )


def test_a_new_run_is_pending_with_a_short_lived_url_to_upload_its_submission_to() -> None:
    runs, events = MemoryRuns(), Events()
    services = memory_services(runs=runs, environments=MemoryEnvironments(_environment()), events=events)

    created = create_run(_request(filename="predictions.zip"), owner="alice", services=services)

    run_id = created.run.run_id
    assert (created.run.status, created.run.owner) == (RunStatus.PENDING, "alice")
    assert created.upload_key == f"submissions/{run_id}/predictions.zip"
    assert created.upload_url == f"https://bucket.test/submissions/{run_id}/predictions.zip?put&expires={TTL}"
    assert (created.upload_method, created.expires_in) == ("PUT", TTL)
    assert list(runs.runs) == [run_id]
    assert events == ["RunCreated"]


def test_a_run_without_a_filename_uploads_submission_zip() -> None:
    services = memory_services(environments=MemoryEnvironments(_environment()))

    created = create_run(_request(), owner="alice", services=services)

    assert created.upload_key == f"submissions/{created.run.run_id}/submission.zip"


def test_a_run_of_an_unregistered_version_is_not_found_and_says_to_upload_it() -> None:
    with pytest.raises(NotFound) as refused:
        create_run(_request(), owner="alice", services=memory_services())

    assert str(refused.value) == (
        "environment 'gsm8k' version '1' is not registered: upload its bundle first (POST /environments)"
    )


def test_a_run_of_a_rejected_version_is_refused_with_its_problems() -> None:
    rejected = _environment(EnvironmentStatus.REJECTED, problems=["no cases", "no scoring"])
    services = memory_services(environments=MemoryEnvironments(rejected))

    with pytest.raises(Conflict) as refused:
        create_run(_request(), owner="alice", services=services)

    assert str(refused.value) == (
        "environment 'gsm8k' version '1' was rejected (no cases; no scoring): fix the bundle and upload it "
        "as a new version"
    )


def test_a_run_of_a_phase_the_environment_lacks_is_refused() -> None:
    phased = _environment(phases=[{"index": 0, "name": "dev"}])
    services = memory_services(environments=MemoryEnvironments(phased))

    with pytest.raises(Unprocessable, match="final"):
        create_run(_request(phase="final"), owner="alice", services=services)


def test_a_live_run_has_nothing_to_upload_and_starts_one_inference_execution_named_for_it() -> None:
    starter = MemoryStarter()
    services = memory_services(
        environments=MemoryEnvironments(_environment()),
        connections=MemoryConnections(_connection()),
        starter=starter,
    )

    created = create_run(
        _request(model_config={"connection_id": "conn-1", "model_id": "example-base"}),
        owner="alice",
        services=services,
    )

    run_id = created.run.run_id
    assert (created.upload_key, created.upload_url, created.expires_in) == (None, None, None)
    assert starter.started == {f"live-{run_id}": {"run_id": run_id}}


def test_a_live_run_that_cannot_start_is_failed_saying_to_create_it_again() -> None:
    runs = MemoryRuns()
    services = memory_services(
        runs=runs,
        environments=MemoryEnvironments(_environment()),
        connections=MemoryConnections(_connection()),
        starter=MemoryStarter(down=ConnectionError("unreachable")),
    )

    with pytest.raises(ConnectionError):
        create_run(
            _request(model_config={"connection_id": "conn-1", "model_id": "example-base"}),
            owner="alice",
            services=services,
        )

    (run,) = runs.runs.values()
    assert (run.status, run.failure_reason) == (
        RunStatus.FAILED,
        "the live run could not be started: create it again in a moment",
    )


def test_a_live_run_on_another_users_connection_is_answered_like_a_missing_one() -> None:
    services = memory_services(
        environments=MemoryEnvironments(_environment()), connections=MemoryConnections(_connection("bob"))
    )

    with pytest.raises(NotFound, match="no connection 'conn-1' of yours"):
        create_run(
            _request(model_config={"connection_id": "conn-1", "model_id": "example-base"}),
            owner="alice",
            services=services,
        )


def test_a_request_retried_with_its_idempotency_key_gets_the_first_run() -> None:
    runs = MemoryRuns()
    services = memory_services(runs=runs, environments=MemoryEnvironments(_environment()))

    first = create_run(_request(), owner="alice", services=services, idempotency_key="k1")
    again = create_run(_request(), owner="alice", services=services, idempotency_key="k1")

    assert again.run == first.run
    assert len(runs.runs) == 1


def test_the_same_idempotency_key_from_another_user_creates_another_run() -> None:
    runs = MemoryRuns()
    services = memory_services(runs=runs, environments=MemoryEnvironments(_environment()))

    alices = create_run(_request(), owner="alice", services=services, idempotency_key="k1")
    bobs = create_run(_request(), owner="bob", services=services, idempotency_key="k1")

    assert alices.run.run_id != bobs.run.run_id
    assert len(runs.runs) == 2


def test_an_idempotency_key_reused_with_another_body_is_refused_saying_what_to_do() -> None:
    services = memory_services(environments=MemoryEnvironments(_environment()))
    create_run(_request(), owner="alice", services=services, idempotency_key="k1")

    with pytest.raises(Unprocessable) as refused:
        create_run(_request(model="other"), owner="alice", services=services, idempotency_key="k1")

    assert str(refused.value) == (
        "Idempotency-Key 'k1' was already used with a different body: resend the same body to get that run, "
        "or use a new key for a new run"
    )


def test_a_refused_request_does_not_use_up_its_idempotency_key() -> None:
    environments = MemoryEnvironments()
    services = memory_services(environments=environments)
    with pytest.raises(NotFound):
        create_run(_request(), owner="alice", services=services, idempotency_key="k1")
    environments.put_if_absent(_environment())

    created = create_run(_request(), owner="alice", services=services, idempotency_key="k1")

    assert created.run.status is RunStatus.PENDING


def test_without_an_idempotency_key_each_request_is_a_new_run() -> None:
    runs = MemoryRuns()
    services = memory_services(runs=runs, environments=MemoryEnvironments(_environment()))

    create_run(_request(), owner="alice", services=services)
    create_run(_request(), owner="alice", services=services)

    assert len(runs.runs) == 2


def test_runs_are_listed_newest_first_in_pages_and_filtered_by_status() -> None:
    runs = MemoryRuns(
        _run("r1", created_at="2026-01-01T00:00:00Z"),
        _run("r2", created_at="2026-01-02T00:00:00Z", status=RunStatus.COMPLETED),
        _run("r3", created_at="2026-01-03T00:00:00Z"),
    )
    services = memory_services(runs=runs)

    first = list_runs(services=services, environment_id="gsm8k", status=None, limit=2, next_token=None)
    rest = list_runs(
        services=services, environment_id="gsm8k", status=None, limit=2, next_token=first.next_token
    )
    completed = list_runs(
        services=services, environment_id=None, status=RunStatus.COMPLETED, limit=20, next_token=None
    )

    assert [run.run_id for run in first.items + rest.items] == ["r3", "r2", "r1"]
    assert rest.next_token is None
    assert [run.run_id for run in completed.items] == ["r2"]


def test_only_the_owner_reads_the_run_configuration() -> None:
    run = _run(run_config={"sampling": {"temperature": 0.5}})
    services = memory_services(runs=MemoryRuns(run))

    assert run_config("r1", owner="alice", services=services).sampling == {"temperature": 0.5}
    with pytest.raises(Forbidden, match="only the run's owner can read its configuration"):
        run_config("r1", owner="bob", services=services)


def test_an_unknown_run_is_not_found_saying_where_runs_are_listed() -> None:
    with pytest.raises(NotFound) as missing:
        run_config("r9", owner="alice", services=memory_services())

    assert str(missing.value) == "no run 'r9': check the id (GET /runs lists runs)"


def test_run_files_are_those_in_the_bucket_with_download_urls_and_a_view_url_for_pages() -> None:
    run = _run(
        status=RunStatus.COMPLETED,
        files={RunOutput.SCORES: "runs/r1/scores.json", RunOutput.DETAILED_HTML: "runs/r1/detailed.html"},
    )
    store = MemoryStore({"runs/r1/scores.json": b"{}", "runs/r1/detailed.html": b"<html/>"})
    services = memory_services(runs=MemoryRuns(run), store=store)

    files = {file.key: file for file in run_files("r1", services=services).files}

    assert files["runs/r1/scores.json"].url == (
        f"https://bucket.test/runs/r1/scores.json?get&expires={TTL}&download=scores.json"
    )
    assert files["runs/r1/scores.json"].view_url is None
    assert (
        files["runs/r1/detailed.html"].view_url
        == f"https://bucket.test/runs/r1/detailed.html?get&expires={TTL}"
    )
    assert files["runs/r1/detailed.html"].size == len(b"<html/>")


def test_detailed_results_of_an_unscored_run_are_not_found_naming_its_status() -> None:
    services = memory_services(runs=MemoryRuns(_run(status=RunStatus.RUNNING)))

    with pytest.raises(NotFound) as missing:
        detailed_results("r1", services=services)

    assert str(missing.value) == "run 'r1' has no detailed results yet (status Running)"


def test_detailed_results_give_the_head_of_the_file_and_a_url_to_it() -> None:
    key = "runs/r1/detailed_results.json"
    head = b'{"title": "GSM8K", "summary": {"cases": 2}, "cases": [{"id": "1"}, {"id": "2"}]}'
    services = memory_services(
        runs=MemoryRuns(_run(status=RunStatus.COMPLETED)), store=MemoryStore({key: head})
    )

    results = detailed_results("r1", services=services)

    assert (results.title, results.summary) == ("GSM8K", {"cases": 2})
    assert results.url == f"https://bucket.test/{key}?get&expires={TTL}&download=detailed_results.json"

"""What `benchgen local` prints once the local cloud is up."""

from __future__ import annotations

from types import SimpleNamespace

from cli.local import summary


def test_the_summary_names_every_state_machine_of_the_stack() -> None:
    prefix = "arn:aws:states:us-east-1:123456789012:stateMachine:benchgen-local-"
    machines = {name: prefix + name for name in ("ArtifactPipeline", "PreparationPipeline")}
    cloud = SimpleNamespace(
        endpoint_url="http://127.0.0.1:5000",
        bucket="data",
        table_names={},
        bus_name="benchgen",
        state_machine_arns=machines,
        user_pool_id="pool",
        client_id="client",
        region="us-east-1",
    )
    console = "http://127.0.0.1:8081 (sign in as the demo user)"
    printed = summary(cloud, "http://127.0.0.1:8000/v1", "token", "password", console).splitlines()
    assert f"  Web console:        {console}" in printed
    assert f"  State machine ArtifactPipeline: {machines['ArtifactPipeline']}" in printed
    assert f"  State machine PreparationPipeline: {machines['PreparationPipeline']}" in printed

"""cdk-nag AwsSolutions: nothing unacknowledged, and every acknowledgment written down with a reason."""

from __future__ import annotations

from typing import Any

import pytest

Resource = dict[str, Any]


def _acknowledgments(resources: dict[str, Resource]) -> list[tuple[str, str, str]]:
    return [
        (logical_id, rule["id"], rule["reason"])
        for logical_id, resource in resources.items()
        for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
    ]


def test_no_finding_is_left_unacknowledged(synthesis: Any) -> None:
    # Given the stack synthesized with the AwsSolutions pack / Then no error or warning remains
    unacknowledged = [
        f"{finding.severity} {finding.rule} at {finding.construct_path}"
        for finding in synthesis.findings
        if finding.rule.startswith("AwsSolutions-")
    ]
    assert unacknowledged == []


def test_every_acknowledgment_gives_a_written_reason(resources: dict[str, Resource]) -> None:
    acknowledgments = _acknowledgments(resources)
    assert acknowledgments
    short = [(logical_id, rule) for logical_id, rule, reason in acknowledgments if len(reason.split()) < 8]
    assert short == []


def test_acknowledgments_sit_on_resources_not_on_the_whole_stack(template: dict[str, Any]) -> None:
    assert "cdk_nag" not in template.get("Metadata", {})


def test_wildcard_acknowledgments_name_the_exact_resource(resources: dict[str, Resource]) -> None:
    wildcard_rules = {
        rule for _, rule, _ in _acknowledgments(resources) if rule.startswith("AwsSolutions-IAM5")
    }
    assert wildcard_rules == {
        "AwsSolutions-IAM5[Resource::*]",
        "AwsSolutions-IAM5[Resource::<BuildArtifactFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::<StartEvaluationFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::<CheckEvaluationFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::<CompareEvaluationFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/runs/*/case_scope.json]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/evaluations/*]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/environments/*]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/submissions/*]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/predictions/*]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/runs/*]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/sandbox/*]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/preparations/*]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/runs/*/scoring_output.zip]",
        # The API looks for a version's bundle before handing out its upload URL; the assembling steps
        # look for the submission they generate before writing it.
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/environments/*/bundle.zip]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/submissions/*/predictions.json]",
        # Batch inference: the jobs' records and output (the functions' and Bedrock's batch role), the jobs
        # (named by Bedrock's ids) and the batch steps' versions
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/batch-output/*]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/runs/*/batch/*]",
        # and a judging pass's: its jobs' records and output, and the judge the poll step reads
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/runs/*/judging/batch/*/records.jsonl]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/runs/*/judging/batch-output/*/*]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/runs/*/judging/judge.json]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*:<AWS::AccountId>:model-invocation-job/*]",
        "AwsSolutions-IAM5[Resource::<SubmitBatchFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::<PollBatchFunction.Arn>:*]",
        # Sharded scoring: the shard files, each shard's parts, the failure log its steps may write, the
        # Map's items list and child executions, and each step function's versions.
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/case-shards/*]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/predictions/*/shards/*]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/runs/*/parts/score/*]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/runs/*/parts/artifact/*]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/runs/*/logs/failure.log]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::BenchGenData-DataBucketName/*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
        '{"Fn::Select":[6,{"Fn::Split":[":",{"Ref":"ShardedScoring"}]}]}:*]',
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
        '{"Fn::Select":[6,{"Fn::Split":[":",{"Ref":"ShardedScoring"}]}]}/*:*]',
        "AwsSolutions-IAM5[Resource::<ScoreShardFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::<BuildShardArtifactFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::<ReduceScoresFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::<PrepareGenerateFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::<PrepareCheckFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::<BuildPackageFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/packages/*]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/preparations/*/examples.jsonl]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/preparations/*/held_out.jsonl]",
        # Live runs: the Map's child executions (its items list is read under the bucket grant above),
        # each step function's versions, and the models and secrets named at run time.
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
        '{"Fn::Select":[6,{"Fn::Split":[":",{"Ref":"InferencePipeline"}]}]}:*]',
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
        '{"Fn::Select":[6,{"Fn::Split":[":",{"Ref":"InferencePipeline"}]}]}/*:*]',
        "AwsSolutions-IAM5[Resource::<DeployModelFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::<PlanInferenceFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::<InferShardFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::<AssemblePredictionsFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*:<AWS::AccountId>:inference-profile/*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*:<AWS::AccountId>:application-inference-profile/*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*:<AWS::AccountId>:custom-model-deployment/*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*:<AWS::AccountId>:provisioned-model/*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:sagemaker:*:<AWS::AccountId>:endpoint/*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:secretsmanager:*:<AWS::AccountId>:secret:*]",
        # Judged runs: the judging pass's working files, the prediction output its plan reads, the judgments
        # it leaves, the Map's child executions and each step function's versions (the score function's too).
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/runs/*/judging/*]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/runs/*/judgments.jsonl]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/predictions/*/prediction_output.zip]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
        '{"Fn::Select":[6,{"Fn::Split":[":",{"Ref":"JudgingPipeline"}]}]}:*]',
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
        '{"Fn::Select":[6,{"Fn::Split":[":",{"Ref":"JudgingPipeline"}]}]}/*:*]',
        "AwsSolutions-IAM5[Resource::<PlanJudgingFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::<JudgeShardFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::<AssembleJudgmentsFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::<ScoreFunction.Arn>:*]",
        # Judge calibrations: their working files (labelled answers and judgments in shards), the Map's child
        # executions and the Assemble step's versions (the shards are the judging pass's JudgeShard).
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/calibrations/*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
        '{"Fn::Select":[6,{"Fn::Split":[":",{"Ref":"CalibrationPipeline"}]}]}:*]',
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
        '{"Fn::Select":[6,{"Fn::Split":[":",{"Ref":"CalibrationPipeline"}]}]}/*:*]',
        "AwsSolutions-IAM5[Resource::<AssembleCalibrationFunction.Arn>:*]",
        # Training: each step function's versions, the training files, the jobs and the connection's role.
        "AwsSolutions-IAM5[Resource::<ValidateTrainingFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::<UploadTrainingFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::<TrainingJobFunction.Arn>:*]",
        "AwsSolutions-IAM5[Resource::BenchGenData-DataBucketArn/training/*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*:<AWS::AccountId>:model-customization-job/*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*:<AWS::AccountId>:custom-model/*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:sagemaker:*:<AWS::AccountId>:training-job/benchgen-*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:iam::<AWS::AccountId>:role/*]",
        # The console's deployment: CDK's handler reads the asset bucket and writes the console bucket.
        "AwsSolutions-IAM5[Action::s3:GetObject*]",
        "AwsSolutions-IAM5[Action::s3:GetBucket*]",
        "AwsSolutions-IAM5[Action::s3:List*]",
        "AwsSolutions-IAM5[Action::s3:DeleteObject*]",
        "AwsSolutions-IAM5[Action::s3:Abort*]",
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*]",
        "AwsSolutions-IAM5[Resource::<ConsoleBucket.Arn>/*]",
    }


@pytest.mark.slow
def test_the_checks_catch_a_non_compliant_resource() -> None:
    # Given the app with an extra bucket in its data stack that has no TLS-only policy and no access logs
    from aws_cdk import aws_s3 as s3

    from infra.synth import synthesize

    def add_unlogged_bucket(stacks: Any) -> None:
        s3.Bucket(stacks.data, "UnloggedBucket")

    # When it is synthesized
    synthesis = synthesize(customize=add_unlogged_bucket)

    # Then cdk-nag reports exactly that bucket
    reported = {(f.rule, f.construct_path) for f in synthesis.findings}
    assert reported == {
        ("AwsSolutions-S1", "BenchGenData/UnloggedBucket/Resource"),
        ("AwsSolutions-S10", "BenchGenData/UnloggedBucket/Resource"),
    }

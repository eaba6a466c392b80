"""The deploy check's steps, each over a small hand-made cloud assembly: reading its stacks, cfn-lint,
the resource count, States Language, cdk-nag's report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from infra.assembly import stack_templates
from infra.deploy_check import RESOURCE_LIMIT, check_assembly, lint_templates, resource_count_problem
from infra.references import render
from infra.state_language import definition_errors, stand_in

Template = dict[str, Any]

ROLE = {
    "Type": "AWS::IAM::Role",
    "Properties": {
        "AssumeRolePolicyDocument": {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "lambda.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
    },
}


def _function(timeout: int, **extra: Any) -> dict[str, Any]:
    return {
        "Type": "AWS::Lambda::Function",
        "Properties": {
            "Runtime": "python3.13",
            "Handler": "handler.handler",
            "Role": {"Fn::GetAtt": ["Role", "Arn"]},
            "Timeout": timeout,
            "Code": {"ZipFile": "def handler(event, context): pass"},
        },
        **extra,
    }


def _fed_by_a_queue(visibility_timeout: int | None) -> Template:
    """A 60 s function fed by a queue, as the dead-letter consumer is."""
    queue_properties = {} if visibility_timeout is None else {"VisibilityTimeout": visibility_timeout}
    return {
        "Resources": {
            "Queue": {"Type": "AWS::SQS::Queue", "Properties": queue_properties},
            "Role": ROLE,
            "Consumer": _function(60),
            "Mapping": {
                "Type": "AWS::Lambda::EventSourceMapping",
                "Properties": {
                    "FunctionName": {"Ref": "Consumer"},
                    "EventSourceArn": {"Fn::GetAtt": ["Queue", "Arn"]},
                },
            },
        }
    }


def _machine(definition: Any) -> Template:
    """A state machine whose definition is joined around a function's ARN, as CDK writes it."""
    return {
        "Resources": {
            "Role": ROLE,
            "Step": _function(60),
            "Machine": {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {"RoleArn": {"Fn::GetAtt": ["Role", "Arn"]}, "DefinitionString": definition},
            },
        }
    }


def _task_then(next_state: str) -> dict[str, Any]:
    """A Lambda invoke task, as CDK joins it: the service integration's ARN in the stack's partition, the
    function by its ARN."""
    return {
        "Fn::Join": [
            "",
            [
                '{"StartAt":"Step","States":{"Step":{"Type":"Task","Resource":"arn:',
                {"Ref": "AWS::Partition"},
                ':states:::lambda:invoke","Parameters":{"FunctionName":"',
                {"Fn::GetAtt": ["Step", "Arn"]},
                f'"}},"Next":"{next_state}"}},"Done":{{"Type":"Succeed"}}}}}}',
            ],
        ]
    }


def _assembly(directory: Path, stacks: dict[str, Template], report: dict[str, Any] | None = None) -> Path:
    """A cloud assembly as cdk synth writes it: a manifest naming each stack's template file."""
    directory.mkdir(exist_ok=True)
    artifacts: dict[str, Any] = {"Tree": {"type": "cdk:tree", "properties": {"file": "tree.json"}}}
    for name, template in stacks.items():
        (directory / f"{name}.template.json").write_text(json.dumps(template))
        artifacts[name] = {
            "type": "aws:cloudformation:stack",
            "properties": {"templateFile": f"{name}.template.json"},
        }
    (directory / "manifest.json").write_text(json.dumps({"version": "55.0.0", "artifacts": artifacts}))
    if report is not None:
        (directory / "validation-report.json").write_text(json.dumps(report))
    return directory


def _write(path: Path, template: Template) -> Path:
    path.write_text(json.dumps(template))
    return path


def test_every_stack_of_the_manifest_is_read_each_followed_by_its_nested_stacks(tmp_path: Path) -> None:
    # Given an assembly of two stacks, the first with a nested stack whose template CDK wrote beside it
    nested = {
        "Type": "AWS::CloudFormation::Stack",
        "Properties": {"TemplateURL": "https://example.com/nested.json"},
        "Metadata": {"aws:asset:path": "DataStorage.nested.template.json"},
    }
    assembly = _assembly(tmp_path, {"Data": {"Resources": {"Storage": nested}}, "Api": {"Resources": {}}})
    (assembly / "DataStorage.nested.template.json").write_text(json.dumps({"Resources": {}}))

    # When its templates are listed
    templates = stack_templates(assembly)

    # Then each stack comes with its nested stack, and the tree artifact is no stack
    assert [(t.name, t.path.name) for t in templates] == [
        ("Data", "Data.template.json"),
        ("Data/Storage", "DataStorage.nested.template.json"),
        ("Api", "Api.template.json"),
    ]


def test_a_queue_hiding_messages_for_less_than_the_timeout_of_the_function_it_feeds_is_a_lint_error(
    tmp_path: Path,
) -> None:
    # Given a 60 s function fed by a queue at SQS's default visibility timeout (30 s), and one at 360 s
    short = _write(tmp_path / "short.json", _fed_by_a_queue(None))
    long = _write(tmp_path / "long.json", _fed_by_a_queue(360))

    # When cfn-lint reads both with the repository's settings
    findings = lint_templates([short, long])

    # Then the first is an error Lambda would refuse at deployment, and the second is clean
    assert [(f.rule, f.level, f.path) for f in findings[short]] == [
        ("E3505", "Error", "Resources/Queue/Properties/VisibilityTimeout")
    ]
    assert findings[long] == []


def test_cdks_depends_on_a_role_also_read_by_getatt_is_ignored_by_the_repositorys_settings_only(
    tmp_path: Path,
) -> None:
    # Given a function that depends on its role, as CDK writes every function and state machine
    template = _write(
        tmp_path / "template.json",
        {"Resources": {"Role": ROLE, "Function": _function(60, DependsOn=["Role"])}},
    )
    no_settings = tmp_path / "empty.yaml"
    no_settings.write_text("{}\n")

    # When cfn-lint reads it with the repository's settings, and with none
    ignored = lint_templates([template])
    plain = lint_templates([template], config=no_settings)

    # Then only the repository's settings leave out the redundant DependsOn
    assert ignored[template] == []
    assert [f.rule for f in plain[template]] == ["W3005"]


def test_a_stack_above_the_resource_limit_is_refused_and_one_at_it_is_not() -> None:
    # Given the limit each stack keeps under (60% of CloudFormation's 500 resources)
    assert RESOURCE_LIMIT == 300

    # Then one resource more is refused, saying what to do, and the limit itself passes
    assert resource_count_problem("BenchGenPipelines", 301) == (
        "BenchGenPipelines has 301 resources, above 300 (CloudFormation allows 500 per stack; each keeps "
        "room to grow): move some into a stack of their own"
    )
    assert resource_count_problem("BenchGenPipelines", 300) is None


def test_the_check_of_an_assembly_refuses_a_stack_of_301_resources_and_reports_its_count(
    tmp_path: Path,
) -> None:
    # Given an assembly whose one stack holds 301 topics
    topics = {f"Topic{n}": {"Type": "AWS::SNS::Topic", "Properties": {}} for n in range(301)}
    assembly = _assembly(tmp_path, {"Big": {"Resources": topics}})

    # When the assembly is checked
    check = check_assembly(assembly)

    # Then its summary counts them and the count is the one problem
    assert check.summary().splitlines()[0].startswith("Big: 301 resources (at most 300), ")
    assert check.problems() == [resource_count_problem("Big", 301)]


def test_references_in_a_definition_stand_in_as_arns_and_names() -> None:
    # Given a definition with a function's ARN, a bucket's name and the partition, as Fn::Sub writes them
    template = _machine(
        {"Fn::Sub": ['{"R":"${Step.Arn}","B":"${Bucket}","P":"${AWS::Partition}","L":"${!Lit}"}', {}]}
    )

    # When the references are stood in for
    text = render(
        template["Resources"]["Machine"]["Properties"]["DefinitionString"], stand_in(template["Resources"])
    )

    # Then the function's reference is an ARN of its type, the rest plausible strings
    assert json.loads(text) == {
        "R": "arn:aws:lambda:us-east-1:123456789012:function:Step",
        "B": "bucket",
        "P": "aws",
        "L": "${Lit}",
    }


def test_values_another_stack_exports_stand_in_as_an_arn_or_a_name() -> None:
    # Given a definition naming an event bus and a table that another stack exports
    template = _machine(
        {
            "Fn::Join": [
                "",
                [
                    '{"Bus":"',
                    {"Fn::ImportValue": "Data-EventBusArn"},
                    '","Table":"',
                    {"Fn::ImportValue": "Data-RunsTableName"},
                    '"}',
                ],
            ]
        }
    )

    # When the references are stood in for
    text = render(
        template["Resources"]["Machine"]["Properties"]["DefinitionString"], stand_in(template["Resources"])
    )

    # Then the exported ARN is an ARN and the exported name a name
    assert json.loads(text) == {
        "Bus": "arn:aws:imported:us-east-1:123456789012:export:Data-EventBusArn",
        "Table": "data-runstablename",
    }


def test_a_valid_definition_passes_asl_validator_with_its_references_stood_in_for() -> None:
    # Given a task state invoking a function, in an ARN of the stack's partition, then a final state
    template = _machine(_task_then("Done"))

    # When its definition is validated
    errors = definition_errors(template)

    # Then it is valid
    assert errors == {"Machine": []}


def test_a_definition_naming_a_missing_state_is_refused_by_asl_validator(tmp_path: Path) -> None:
    # Given a task state whose next state does not exist, in an assembly
    assembly = _assembly(tmp_path, {"Flow": _machine(_task_then("Nowhere"))})

    # When the assembly is checked
    check = check_assembly(assembly)

    # Then the machine is not valid, with asl-validator's reason
    assert "state machines 0 of 1 valid" in check.summary()
    assert check.problems() == [
        "Flow: state machine Machine is not valid States Language: "
        "MISSING_TRANSITION_TARGET: State Done is not reachable; "
        "MISSING_TRANSITION_TARGET: Missing 'StartAt'|'Next'|'Default' target: Nowhere"
    ]


def test_an_unacknowledged_nag_finding_fails_the_check_naming_its_rule_and_construct(tmp_path: Path) -> None:
    # Given an assembly whose cdk-nag report holds one violation
    report = {
        "pluginReports": [
            {
                "violations": [
                    {
                        "ruleName": "AwsSolutions-SQS3",
                        "severity": "error",
                        "violatingConstructs": [{"constructPath": "Flow/Queue/Resource"}],
                    }
                ]
            }
        ]
    }
    assembly = _assembly(tmp_path, {"Flow": {"Resources": {}}}, report)

    # When the assembly is checked
    check = check_assembly(assembly)

    # Then the summary counts it and the problem says where it is and what to do
    assert check.summary().splitlines()[-1] == "cdk-nag unacknowledged findings: 1 error"
    assert check.problems() == [
        "cdk-nag AwsSolutions-SQS3 (error) on Flow/Queue/Resource: fix it, or acknowledge it with its reason "
        "in infra/nag.py"
    ]

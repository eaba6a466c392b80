"""What an operator watches: one dashboard, and alarms on failed runs, failed steps and dead letters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from benchgen.records.runs import RunStatus
from benchgen.settings import METRICS_NAMESPACE
from infra.constructs.catalog import INGEST, SCORE

# A run ends as the business metric `Run<status>`: Completed or Failed by the score function, Failed by
# the ingest function when it refuses a submission. Powertools adds the function's service name
# (POWERTOOLS_SERVICE_NAME, its folder name) as the `service` dimension.
RUN_ENDS: tuple[tuple[str, RunStatus], ...] = (
    (SCORE.name, RunStatus.COMPLETED),
    (INGEST.name, RunStatus.FAILED),
    (SCORE.name, RunStatus.FAILED),
)
PERIOD = Duration.minutes(5)
# Queue metrics are sampled each minute; one message sent to a dead-letter queue is enough to alarm.
QUEUE_PERIOD = Duration.minutes(1)
_WIDGET_WIDTH = 8


def run_metric(status: RunStatus, service: str) -> cloudwatch.Metric:
    """How many runs reached `status` per period, as the function named `service` records them."""
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=f"Run{status.value}",
        dimensions_map={"service": service},
        statistic=cloudwatch.Stats.SUM,
        period=PERIOD,
    )


class Monitoring(Construct):
    """A dashboard of the application, and alarms that notify `topic` (subscribe operators to it)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: Mapping[str, lambda_.Function],
        state_machines: Sequence[sfn.StateMachine],
    ) -> None:
        super().__init__(scope, construct_id)
        key = kms.Key(
            self, "AlarmTopicKey", enable_key_rotation=True, description="Encrypts the BenchGen alarm topic"
        )
        # An alarm can publish to an encrypted topic only if the key lets CloudWatch use it, which the
        # AWS-managed SNS key cannot; the condition keeps other accounts' alarms out.
        key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}},
            )
        )
        self.topic = sns.Topic(
            self, "AlarmTopic", display_name="BenchGen alarms", master_key=key, enforce_ssl=True
        )
        self._action = cloudwatch_actions.SnsAction(self.topic)
        self.alarms: list[cloudwatch.Alarm] = []

        for service, status in RUN_ENDS:
            if status is RunStatus.FAILED:
                self._alarm(
                    f"RunsFailedIn{service.title()}Alarm",
                    run_metric(status, service),
                    f"A run failed in its {service} step: the reason is on the run (GET /runs/{{run_id}}).",
                )
        queues: dict[str, cloudwatch.IMetric] = {}
        for name, function in functions.items():
            self._alarm(
                f"{_camel(name)}ErrorsAlarm",
                function.metric_errors(period=PERIOD, statistic=cloudwatch.Stats.SUM),
                f"The {name} function raised an error; see its log group.",
            )
            if function.dead_letter_queue is not None:
                queue = function.dead_letter_queue
                depth = queue.metric_approximate_number_of_messages_visible(
                    period=QUEUE_PERIOD, statistic=cloudwatch.Stats.MAXIMUM
                )
                queues[name] = depth.with_(label=name)
                # Counted as it arrives: the dead-letter consumer deletes the run steps' messages within
                # seconds, before a depth sample would see them.
                self._alarm(
                    f"{_camel(name)}DeadLettersAlarm",
                    queue.metric_number_of_messages_sent(period=QUEUE_PERIOD, statistic=cloudwatch.Stats.SUM),
                    f"An event for the {name} function failed every retry and went to its dead-letter "
                    "queue; the dead_letters function logs which run or bundle it ended. Fix the cause.",
                )
        for machine in state_machines:
            machine_id = _machine_id(machine)
            self._alarm(
                f"{machine_id}ExecutionsFailedAlarm",
                machine.metric_failed(period=PERIOD, statistic=cloudwatch.Stats.SUM),
                f"An execution of the {machine_id} state machine failed; its history names the failed step.",
            )
            self._alarm(
                f"{machine_id}ExecutionsTimedOutAlarm",
                machine.metric_timed_out(period=PERIOD, statistic=cloudwatch.Stats.SUM),
                f"An execution of the {machine_id} state machine ran past its timeout.",
            )

        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", default_interval=Duration.days(1))
        self.dashboard.add_widgets(
            _graph(
                "Runs",
                [
                    run_metric(status, service).with_(label=f"Runs {status.value.lower()} ({service})")
                    for service, status in RUN_ENDS
                ],
            ),
            _graph(
                "State machine executions",
                [
                    metric
                    for machine in state_machines
                    for metric in (
                        machine.metric_started(period=PERIOD, label=f"{_machine_id(machine)} started"),
                        machine.metric_succeeded(period=PERIOD, label=f"{_machine_id(machine)} succeeded"),
                        machine.metric_failed(period=PERIOD, label=f"{_machine_id(machine)} failed"),
                    )
                ],
            ),
            cloudwatch.AlarmStatusWidget(
                title="Alarms", alarms=list(self.alarms), width=_WIDGET_WIDTH, height=6
            ),
        )
        self.dashboard.add_widgets(
            _graph(
                "Function errors", [f.metric_errors(period=PERIOD, label=n) for n, f in functions.items()]
            ),
            _graph(
                "Function throttles",
                [f.metric_throttles(period=PERIOD, label=n) for n, f in functions.items()],
            ),
            _graph(
                "Function duration (p99)",
                [f.metric_duration(period=PERIOD, statistic="p99", label=n) for n, f in functions.items()],
            ),
        )
        self.dashboard.add_widgets(_graph("Dead-letter queue depth", list(queues.values())))

    def _alarm(self, construct_id: str, metric: cloudwatch.IMetric, description: str) -> None:
        """Alarm as soon as the metric is above zero in one period; no data (nothing happened) is fine."""
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            metric=metric,
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        alarm.add_alarm_action(self._action)
        alarm.add_ok_action(self._action)
        self.alarms.append(alarm)


def _machine_id(machine: sfn.StateMachine) -> str:
    """The state machine's name in the construct tree (`Pipeline` + `StateMachine`): unique in the stack."""
    owner = machine.node.scope
    return f"{owner.node.id if owner is not None else ''}{machine.node.id}"


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def _graph(title: str, metrics: Sequence[cloudwatch.IMetric]) -> cloudwatch.GraphWidget:
    return cloudwatch.GraphWidget(title=title, left=list(metrics), width=_WIDGET_WIDTH)

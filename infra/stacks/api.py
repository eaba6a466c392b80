"""The API stack: the api function, API Gateway in front of it, and the web console on CloudFront.

They depend on one another both ways (the console's page names the API; the API and its function answer
the console's origin alone), so they deploy together, after the pipelines whose executions the API starts.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.constructs.api import Api
from infra.constructs.catalog import API
from infra.constructs.console import CONSOLE_ASSETS, Console, allow_console_origin, console_assets
from infra.constructs.functions import Functions
from infra.constructs.layer import Layer
from infra.stacks import API_STACK
from infra.stacks.data import DataStack
from infra.stacks.pipelines import PipelinesStack

# `cdk deploy -c benchgen:evaluationWaitSeconds=30`: how long an evaluation waits between checks of its
# runs (the functions' default, 60 seconds, when not given).
EVALUATION_WAIT_SECONDS = "benchgen:evaluationWaitSeconds"


class ApiStack(Stack):
    def __init__(
        self,
        scope: Construct,
        data: DataStack,
        pipelines: PipelinesStack,
        construct_id: str = API_STACK,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.add_stack_dependency(data)
        imported = data.imports(self)
        # A layer version of its own, from the same asset: a new library version replaces the layer
        # version, and CloudFormation would refuse to change an export of the pipelines stack in use here.
        self.layer = Layer(self, "ApiLayer")
        self.functions = Functions(
            self,
            "Functions",
            storage=imported.stored,
            bus=imported.bus,
            layer=self.layer.layer,
            specs=(API,),
        )
        self.function = self.functions.by_name[API.name]
        self._start(pipelines)
        self.function.add_environment("EVALUATORS_GROUP", str(data.users.evaluators_group.group_name))
        self.api = Api(self, "Api", handler=self.function, user_pool=imported.user_pool)
        self.console = Console(
            self,
            "Console",
            api=self.api,
            user_pool_id=imported.user_pool_id,
            client_id=imported.console_client_id,
            data_bucket=imported.stored.bucket,
            assets=console_assets(self.node.try_get_context(CONSOLE_ASSETS)),
        )
        allow_console_origin(self.api.rest_api, self.console.origin)
        self.function.add_environment("CONSOLE_ORIGIN", self.console.origin)
        # Where users sign in and call the API after `cdk deploy`.
        CfnOutput(self, "ApiUrl", value=self.api.rest_api.url)
        CfnOutput(self, "ConsoleUrl", value=self.console.origin, description="The web console")

    def _start(self, pipelines: PipelinesStack) -> None:
        """The API starts preparations, packages, live runs, training runs and evaluations."""
        starts: dict[str, sfn.StateMachine] = {
            "PREPARATION_STATE_MACHINE_ARN": pipelines.preparations.state_machine,
            "PACKAGE_STATE_MACHINE_ARN": pipelines.packages.state_machine,
            "INFERENCE_STATE_MACHINE_ARN": pipelines.inference.state_machine,
            "TRAINING_STATE_MACHINE_ARN": pipelines.training.state_machine,
            "EVALUATION_STATE_MACHINE_ARN": pipelines.evaluation.state_machine,
        }
        for variable, state_machine in starts.items():
            self.function.add_environment(variable, state_machine.state_machine_arn)
            state_machine.grant_start_execution(self.function)
        wait = self.node.try_get_context(EVALUATION_WAIT_SECONDS)
        if wait is not None:
            self.function.add_environment("EVALUATION_WAIT_SECONDS", str(int(wait)))

"""The throwaway kind's definition: what ``benchgen/providers/throwaway.py`` would hold."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from benchgen.providers.capabilities import ConnectionLimits, ConnectionProfile
from benchgen.providers.definition import Grant, IamNeeds, ProviderDefinition
from benchgen.providers.hyperparameters import Hyperparameter, check_named
from benchgen.records.runs import LiveModel
from benchgen.records.training_runs import TrainingStatus
from benchgen.vocabulary import Method, ProviderKind

TITLE = "Throwaway training"
PREFERENCE_GAP = "Throwaway training has no preference method"
MODEL_CALLS = Grant(
    actions=("throwaway:InvokeModel",),
    resources=("arn:{partition}:throwaway:*:{account}:model/*",),
    reason="A live run names its throwaway model when it is created; the grant stays on this account's.",
)
JOBS = Grant(
    actions=("throwaway:StartJob", "throwaway:ReadJob"),
    resources=("arn:{partition}:throwaway:*:{account}:job/benchgen-*",),
    reason="The jobs are named by BenchGen; the grant stays on this account's jobs of that name.",
)
ROLE_SERVICE = "throwaway.amazonaws.com"


class Throwaway(ProviderDefinition):
    kind = ProviderKind("throwaway")
    title = TITLE
    capabilities = ConnectionProfile(
        methods=[Method.DEMONSTRATION],
        model_families=["qwen"],
        export_profiles=["openai-chat"],
        limits=ConnectionLimits(max_rows=1000),
    )
    method_gaps = MappingProxyType({Method.PREFERENCE: PREFERENCE_GAP})
    family_gap = "Throwaway training fine-tunes only Qwen models"
    inference_path = "throwaway chat"
    statuses = MappingProxyType(
        {
            "training": TrainingStatus.RUNNING,
            "done": TrainingStatus.SUCCEEDED,
            "broken": TrainingStatus.FAILED,
        }
    )
    requires = frozenset({"region"})
    accepts = frozenset({"role_arn"})
    iam = IamNeeds(calls_models=(MODEL_CALLS,), runs_jobs=(JOBS,), assumes_role=ROLE_SERVICE)

    def check_hyperparameters(
        self, base_model: str, values: Mapping[str, str | int | float]
    ) -> dict[str, str]:
        return check_named(self.kind, base_model, {"epochs": Hyperparameter(int, 1, 3)}, values)

    def where(self, live: LiveModel) -> str:
        return f"throwaway model {live.model_id} in {live.region}"


PROVIDER = Throwaway()

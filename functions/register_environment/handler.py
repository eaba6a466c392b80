"""S3 ObjectCreated under environments/: validate the bundle and record the environment version."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import adapters
from benchgen.ports.storage import UploadedObject
from benchgen.steps.register import Judges, register_environment

function = LambdaFunction("register_environment", counts=True)


def register(upload: UploadedObject) -> dict[str, Any]:
    wired = adapters()
    with scratch() as workdir:
        record = register_environment(
            upload.key,
            upload.version_id,
            store=wired.store,
            environments=wired.environments,
            workdir=workdir,
            max_program_seconds=wired.settings.max_program_seconds,
            shard_cases=wired.settings.shard_cases,
            judges=Judges(
                wired.connections, wired.calibration_starter, shard_size=wired.settings.inference_shard_size
            ),
        )
    function.count(f"Environment{record.status.value}")
    return {"environment_id": record.environment_id, "version": record.version, "status": record.status.value}


handler = function.uploads(register, answers="environments")

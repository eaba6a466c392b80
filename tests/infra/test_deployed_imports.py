"""Deployed as built: every handler imports with only its code asset, the layer and the runtime's boto3.

The layer and the runtime stand-in are built once per session with pip (PyPI, or pip's cache), for this
machine's Python, by the same resolution that builds the deployed layer for arm64 / CPython 3.13.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.deployed

# Every runtime's sandbox function runs functions/sandbox.
SANDBOX = "sandbox"
# The functions whose powertools utility imports asyncio with its package: the API's event handler (its
# package brings the AppSync resolver) and the batch utilities that read the dead letters.
ASYNCIO_BY_POWERTOOLS = frozenset({"api", "dead_letters"})

# Prints where the modules that matter were found, as seen from the function's own search path.
PROBE = """
import importlib, json
module = importlib.import_module({module!r})
roots = dict(task={task!r}, layer={layer!r}, runtime={runtime!r})
def root(name):
    path = getattr(sys.modules.get(name), "__file__", None) or ""
    return next((label for label, folder in roots.items() if folder and path.startswith(folder)), None)
print(json.dumps({{
    "handler": callable(getattr(module, {handler!r}, None)),
    "module": root({module!r}),
    "aws_xray_sdk": root("aws_xray_sdk"),
    "benchgen": root("benchgen"),
    "botocore": root("botocore"),
    "asyncio": "asyncio" in sys.modules,
}}))
"""


def _dist_names(folder: Path) -> set[str]:
    from infra.constructs.layer import canonical_name

    return {canonical_name(p.name.split("-", 1)[0]) for p in folder.glob("*.dist-info")}


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The layer's python/ tree and the runtime's packages, for this machine, once per session."""
    from infra.constructs.layer import THIS_MACHINE, build_layer
    from infra.deployed import build_runtime

    root = tmp_path_factory.mktemp("deployed")
    return {
        "layer": build_layer(root / "layer", THIS_MACHINE),
        "runtime": build_runtime(root / "runtime", THIS_MACHINE),
    }


@pytest.fixture(scope="session")
def deployed(
    template: dict[str, Any], built: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    from infra.deployed import deployed_functions

    assembled = deployed_functions(
        template,
        tmp_path_factory.mktemp("tasks"),
        layer_root=built["layer"],
        runtime_root=built["runtime"],
    )
    return {function.name: function for function in assembled}


def _probe(function: Any) -> dict[str, Any]:
    code = PROBE.format(
        module=function.handler_module,
        handler=function.handler_name,
        task=str(function.task_root),
        layer=str(function.layer_root or ""),
        runtime=str(function.runtime_root),
    )
    done = function.run(code)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_every_handler_imports_with_only_its_asset_its_layer_and_the_runtimes_boto3(
    deployed: dict[str, Any],
) -> None:
    # Given each function assembled as Lambda runs it (asset, layer, runtime), with its template environment
    # When its handler module is imported in an isolated interpreter
    outcomes = {name: _probe(function) for name, function in deployed.items()}

    # Then every handler starts: the entry point is there, the tracer's X-Ray SDK and the library come
    # from the layer, and botocore from the runtime (a function without the layer: from its own asset);
    # none has imported asyncio, which nothing a function does uses, but where a powertools utility does
    assert outcomes == {name: _started(function, outcomes[name]) for name, function in deployed.items()}


def _started(function: Any, outcome: dict[str, Any]) -> dict[str, Any]:
    if function.layer_root is None:
        return {**outcome, "handler": True, "module": "task", "asyncio": False}
    if function.name.startswith(SANDBOX):
        # The sandbox reaches S3 only through presigned URLs and has nothing to trace: no SDK at all.
        return {
            "handler": True,
            "module": "task",
            "aws_xray_sdk": None,
            "benchgen": "layer",
            "botocore": None,
            "asyncio": False,
        }
    return {
        "handler": True,
        "module": "task",
        "aws_xray_sdk": "layer",
        "benchgen": "layer",
        "botocore": "runtime",
        "asyncio": function.name in ASYNCIO_BY_POWERTOOLS,
    }


def test_a_package_only_the_development_environment_has_is_missing_there(deployed: dict[str, Any]) -> None:
    # Given the score function as deployed / When it imports moto, which only the dev environment installs
    done = deployed["score"].run("import moto")

    # Then the import fails: the check cannot be passed by the development environment's packages
    assert done.returncode == 1
    assert "ModuleNotFoundError: No module named 'moto'" in done.stderr


def test_the_functions_see_the_environment_the_template_gives_them(
    deployed: dict[str, Any], functions: dict[str, Any]
) -> None:
    # Given the score function as deployed / When it prints its environment
    done = deployed["score"].run("import os, json; print(json.dumps(dict(os.environ)))")

    # Then it has the template's variables (references as placeholders), and no credentials
    seen = json.loads(done.stdout)
    template_names = set(functions["score"]["Properties"]["Environment"]["Variables"])
    assert template_names <= set(seen)
    assert seen["POWERTOOLS_SERVICE_NAME"] == "score"
    assert seen["DATA_BUCKET"] == "${DataBucket}"
    assert not any(name.startswith("AWS_SECRET") or name == "AWS_ACCESS_KEY_ID" for name in seen)


def test_the_runtime_stand_in_is_exactly_what_the_layer_leaves_out(built: dict[str, Path]) -> None:
    from infra.constructs.layer import RUNTIME_PROVIDED

    # Given boto3 installed with its dependencies (the runtime stand-in) and the layer
    runtime = _dist_names(built["runtime"])
    layer = _dist_names(built["layer"])

    # Then boto3's dependencies are exactly the packages the layer assumes the runtime ships,
    # and the layer carries none of them but does carry the tracer's SDK
    assert runtime == RUNTIME_PROVIDED
    assert layer & RUNTIME_PROVIDED == set()
    assert {"aws-xray-sdk", "wrapt", "aws-lambda-powertools", "pydantic-core"} <= layer


def test_the_tested_layer_has_the_deployed_layers_package_set() -> None:
    from infra.constructs.layer import LAMBDA_TARGET, THIS_MACHINE, layer_packages

    # Given the layer's package set resolved for Lambda (arm64, CPython 3.13) and for this machine
    deployed = layer_packages(LAMBDA_TARGET)
    here = layer_packages(THIS_MACHINE)

    # Then they are the same pinned distributions, so the import test above tests the deployed set
    assert deployed == here
    assert "aws-xray-sdk==2.15.0" in deployed

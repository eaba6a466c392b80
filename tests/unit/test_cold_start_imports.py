"""What importing a handler loads, which every cold start pays before its first event.

The X-Ray SDK only where powertools would trace (tracing off costs nothing), boto3 and botocore's client
not before a first client is made, and the records' validators not before a record is validated.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
HANDLERS = sorted(
    f"functions.{handler.parent.name}.handler" for handler in ROOT.glob("functions/*/handler.py")
)

# Imports the handlers in a fresh interpreter and says what each got as its tracer, and whether the SDK
# was loaded: only a new process shows what an import pulls in.
PROBE = """
import importlib, json, sys
tracers = {}
for name in NAMES:
    module = importlib.import_module(name)
    function = getattr(module, "function", None)
    if function is not None:
        tracer = function.tracer
        tracers[name] = [type(tracer).__module__ + "." + type(tracer).__name__, tracer.service]
modules = {"xray": "aws_xray_sdk", "boto3": "boto3", "asyncio": "asyncio", "yaml": "yaml"}
loaded = {name: module in sys.modules for name, module in modules.items()}
print(json.dumps({"tracers": tracers, **loaded}))
"""


def _in_fresh_process(code: str, environment: dict[str, str] | None = None) -> Any:
    """What `code` prints last, as JSON, run in a fresh interpreter that sees the repository's library."""
    # What this process was started with, less whatever would decide the tracing for the child.
    inherited = {
        key: value for key, value in os.environ.items() if not key.startswith(("POWERTOOLS_", "LAMBDA_"))
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**inherited, "PYTHONPATH": f"{ROOT / 'layers'}{os.pathsep}{ROOT}", **(environment or {})},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _import_in_fresh_process(names: list[str], environment: dict[str, str]) -> dict[str, Any]:
    result: dict[str, Any] = _in_fresh_process(f"NAMES = {names!r}\n{PROBE}", environment)
    return result


@pytest.mark.parametrize(
    "environment",
    [
        pytest.param({}, id="outside-lambda"),
        pytest.param({"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "true"}, id="disabled"),
    ],
)
def test_with_tracing_off_no_handler_imports_the_xray_sdk(environment: dict[str, str]) -> None:
    # Given an environment where powertools would not trace (off Lambda, or switched off on it)
    # When every handler is imported into one fresh interpreter
    seen = _import_in_fresh_process(HANDLERS, environment)

    # Then none of them loaded the X-Ray SDK, and each still has a tracer under its own service name
    assert seen["xray"] is False
    assert seen["tracers"]
    assert seen["tracers"] == {
        name: ["benchgen.observability.QuietTracer", name.split(".")[1]] for name in seen["tracers"]
    }


def test_with_tracing_on_the_handler_gets_powertools_tracer(tmp_path: Path) -> None:
    # Given a Lambda environment with tracing left on, as the stack deploys every function
    environment = {"LAMBDA_TASK_ROOT": str(tmp_path)}

    # When the score handler is imported
    seen = _import_in_fresh_process(["functions.score.handler"], environment)

    # Then its tracer is powertools' own, with the X-Ray SDK behind it, and the SDK brought no asyncio
    # (the SDK's wrapt from 2 on imports it), which nothing a task function does needs
    assert seen["tracers"] == {
        "functions.score.handler": ["aws_lambda_powertools.tracing.tracer.Tracer", "score"]
    }
    assert seen["xray"] is True
    assert seen["asyncio"] is False


# Imports the score handler where tracing is on, then makes its first client: says whether botocore's
# client machinery came before that client, and whether X-Ray then records the calls clients make.
TRACED_CALLS_PROBE = """
import json, sys
import functions.score.handler
before = "botocore.client" in sys.modules
from benchgen.aws import clients
clients.s3()
from botocore.client import BaseClient
print(json.dumps({"before": before, "traced": hasattr(BaseClient._make_api_call, "__wrapped__")}))
"""


def test_with_tracing_on_botocore_comes_with_the_first_client_and_its_calls_are_traced(
    tmp_path: Path,
) -> None:
    # Given a Lambda environment with tracing left on, as the stack deploys every function
    environment = {"LAMBDA_TASK_ROOT": str(tmp_path), "AWS_DEFAULT_REGION": "us-east-1"}

    # When the score handler is imported, then makes its first client
    seen = _in_fresh_process(TRACED_CALLS_PROBE, environment)

    # Then the import left botocore's client machinery to the first client, whose calls X-Ray records
    assert seen == {"before": False, "traced": True}


# Imports the score handler where tracing is on: says what a SQLite connection then is.
SQLITE_PROBE = """
import json, sqlite3
import functions.score.handler
connection = sqlite3.connect(":memory:")
print(json.dumps({"sqlite3": type(connection).__module__ + "." + type(connection).__name__}))
"""


def test_with_tracing_on_http_calls_are_traced_and_the_spools_sqlite_statements_are_not(
    tmp_path: Path,
) -> None:
    # Given a Lambda environment with tracing left on, as the stack deploys every function
    environment = {"LAMBDA_TASK_ROOT": str(tmp_path)}

    # When the score handler is imported, then opens a SQLite database as its spools and joins do
    seen = _in_fresh_process(SQLITE_PROBE, environment)

    # Then its SQLite statements (a batch or a lookup each, on the per-case path) are plain calls, not an
    # X-Ray subsegment each
    assert seen == {"sqlite3": "sqlite3.Connection"}


def test_a_quiet_tracer_leaves_the_handler_as_it_is() -> None:
    from benchgen.observability import QuietTracer

    # Given a handler
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"seen": event["n"]}

    # When a quiet tracer decorates it
    decorated = QuietTracer("score").capture_lambda_handler(handler)

    # Then the handler runs as it is, with nothing wrapped around it
    assert decorated is handler
    assert decorated({"n": 3}, None) == {"seen": 3}


def test_no_handler_imports_boto3_before_its_first_client() -> None:
    # Given a Lambda environment with tracing off (where it is on, botocore also waits for the first client)
    environment = {"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "true"}

    # When every handler, the API's too, is imported into one fresh interpreter
    seen = _import_in_fresh_process(HANDLERS, environment)

    # Then boto3 was not loaded: the clients, the item codec and the idempotency layer import it on first use
    assert seen["boto3"] is False
    assert "functions.api.handler" in seen["tracers"]
    assert len(seen["tracers"]) >= 15


def test_no_handler_imports_pyyaml_before_it_reads_a_bundle_or_runs_a_program() -> None:
    # Given a Lambda environment with tracing off
    environment = {"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "true"}

    # When every handler, the API's too, is imported into one fresh interpreter
    seen = _import_in_fresh_process(HANDLERS, environment)

    # Then PyYAML was not loaded: a bundle's reading, a program's metadata and scores.txt, and an ingestion's
    # output metadata import it when they read or write YAML
    assert seen["yaml"] is False
    assert "functions.register_environment.handler" in seen["tracers"]


def test_the_records_a_step_imports_build_their_validators_when_first_used() -> None:
    # Given a fresh interpreter / When it imports the run records and the bundle's spec
    probe = (
        "import json\n"
        "from benchgen.records.runs import RunRecord, RunConfig\n"
        "from benchgen.bundle.spec import CompetitionSpec\n"
        "built = [m.__pydantic_complete__ for m in (RunRecord, RunConfig, CompetitionSpec)]\n"
        "config = RunConfig.model_validate({'sampling': {'temperature': 0.2}})\n"
        "print(json.dumps({'built': built, 'after': RunConfig.__pydantic_complete__,\n"
        "                  'config': config.model_dump(mode='json')}))"
    )
    seen = _in_fresh_process(probe)

    # Then none was built by the import, and the one validated was built then, and validates as before
    assert seen["built"] == [False, False, False]
    assert seen["after"] is True
    assert seen["config"] == {"sampling": {"temperature": 0.2}, "environment_variables": {}}


def test_the_functions_wiring_imports_no_adapter_before_a_function_asks_for_it() -> None:
    # Given a fresh interpreter / When it imports what every handler imports to be wired
    probe = (
        "import json, sys, benchgen.aws.handlers\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(PREFIXES))))"
    )
    prefixes = ("benchgen.aws.", "benchgen.sandbox", "benchgen.records", "benchgen.inference")
    seen = _in_fresh_process(f"PREFIXES = {prefixes!r}\n{probe}")

    # Then no table, store, sandbox or record module came with it: each function imports those it uses
    assert seen == ["benchgen.aws.clients", "benchgen.aws.handlers", "benchgen.aws.wiring"]


def test_reading_the_settings_imports_neither_pydantic_settings_nor_asyncio() -> None:
    # Given a fresh interpreter / When it imports the settings every function reads at its start
    probe = (
        "import json, sys, benchgen.settings\n"
        "print(json.dumps(sorted(m for m in ('asyncio', 'pydantic_settings') if m in sys.modules)))"
    )
    seen = _in_fresh_process(probe)

    # Then neither came with them: the settings are plain pydantic models read from the environment
    assert seen == []


# Lists the pydantic models of the library and the handlers whose validator an import built.
BUILT_PROBE = """
import importlib, json
from pydantic import BaseModel
for name in NAMES:
    importlib.import_module(name)
def subclasses(model):
    for sub in model.__subclasses__():
        yield sub
        yield from subclasses(sub)
print(json.dumps(sorted({
    f"{model.__module__}.{model.__qualname__}" for model in subclasses(BaseModel)
    if model.__module__.startswith(("benchgen.", "functions.")) and model.__pydantic_complete__
})))
"""


@pytest.mark.parametrize(
    "names",
    [
        pytest.param([name for name in HANDLERS if name != "functions.api.handler"], id="task-functions"),
        pytest.param(["functions.api.handler"], id="api"),
    ],
)
def test_importing_a_function_builds_none_of_its_models(names: list[str]) -> None:
    # Given a Lambda environment, and the handlers of the task functions, or the API's with every route's
    # request and response bodies
    environment = {"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "true"}

    # When they are imported into one fresh interpreter
    built = _in_fresh_process(f"NAMES = {names!r}\n{BUILT_PROBE}", environment)

    # Then none was built: every model of the library or of a handler builds when first used (a route's
    # bodies with the route's first request), those a module makes an instance of at import (a default,
    # a provider's capabilities) too
    assert built == []


def test_the_evaluation_steps_before_compare_import_neither_the_comparison_nor_its_report() -> None:
    # Given the functions of an evaluation's Start and Check steps, which only read records and start runs
    names = ["functions.start_evaluation.handler", "functions.check_evaluation.handler"]
    probe = (
        "import importlib, json, sys\n"
        "for name in NAMES:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('benchgen.compare.report',\n"
        "    'benchgen.evaluation.report', 'benchgen.report')))))"
    )

    # When both are imported into one fresh interpreter
    seen = _in_fresh_process(f"NAMES = {names!r}\n{probe}")

    # Then neither the paired comparison nor the reports came with them: only Compare's function needs them
    assert seen == []


API_ROUTERS = sorted(
    f"benchgen.api.{module.stem}"
    for module in (ROOT / "layers" / "benchgen" / "api").glob("*.py")
    if "router = Router()" in module.read_text(encoding="utf-8")
)

# Imports the API's handler, then has its resolver answer one request (EVENT): says which of the API's
# routers the import loaded, which the request did, and the request's status.
API_PROBE = """
import json, sys
import functions.api.handler as api
def routers():
    return sorted(name for name in ROUTERS if name in sys.modules)
at_import = routers()
answer = api.app.resolve(EVENT, None)
print(json.dumps({"at_import": at_import, "after": routers(), "status": answer["statusCode"]}))
"""


def _get_event(path: str) -> dict[str, Any]:
    """An API Gateway REST proxy event of a signed-in user's GET of ``path``."""
    return {
        "resource": path,
        "path": path,
        "httpMethod": "GET",
        "headers": {"Accept": "application/json"},
        "multiValueHeaders": {"Accept": ["application/json"]},
        "queryStringParameters": None,
        "requestContext": {
            "resourcePath": path,
            "httpMethod": "GET",
            "requestId": "req-1",
            "stage": "v1",
            "authorizer": {"claims": {"sub": "user-a"}},
        },
        "body": None,
        "isBase64Encoded": False,
    }


def test_the_api_imports_a_routers_code_with_the_first_request_for_its_resource() -> None:
    # Given a Lambda environment, and the API's routers (one module per resource)
    environment = {"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "true"}
    assert len(API_ROUTERS) == 9
    event = _get_event("/export-profiles")

    # When the API's handler is imported, then answers a request for the export profiles
    probe = f"ROUTERS = {API_ROUTERS!r}\nEVENT = {event!r}\n{API_PROBE}"
    seen = _in_fresh_process(probe, environment)

    # Then the import loaded no router (nor the request logic and bodies they name), and the request loaded
    # its own router alone, which answered it
    assert seen == {"at_import": [], "after": ["benchgen.api.export_profiles"], "status": 200}


def test_the_apis_start_imports_neither_the_ports_its_services_name_nor_the_domain() -> None:
    # Given a Lambda environment
    environment = {"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "true"}

    # When the API's handler is imported into a fresh interpreter
    probe = (
        "import json, sys, functions.api.handler\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(PREFIXES))))"
    )
    prefixes = (
        "benchgen.ports.",
        "benchgen.records.",
        "benchgen.providers",
        "benchgen.training",
        "benchgen.finetune",
        "benchgen.bundle",
    )
    seen = _in_fresh_process(f"PREFIXES = {prefixes!r}\n{probe}", environment)

    # Then of the ports only the listings' page came (its bad token is an error the API maps to 400), and of
    # the records only their bounds (the error answers clip what they quote); no provider, training, finetune
    # or bundle module (the error handlers take Unsupported from benchgen.errors): the routes import the
    # ports, records and domain they use, with their first request
    assert seen == ["benchgen.ports.pages", "benchgen.records.bounds"]

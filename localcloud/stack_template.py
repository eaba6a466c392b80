"""Read a synthesized CloudFormation template and resolve its references against the local cloud.

The local cloud creates resources through the service APIs and records, per logical id, what ``Ref`` and
``Fn::GetAtt`` give for it. Anything it cannot resolve is refused with the logical id in the message:
a guessed name would make the local application silently differ from the deployed one.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

PARTITION = "aws"
ACCOUNT_ID = "123456789012"
URL_SUFFIX = "amazonaws.com"
SERVICE_NAME_VARIABLE = "POWERTOOLS_SERVICE_NAME"
_SUB_VARIABLE = re.compile(r"\$\{([^}]*)\}")


class UnresolvedReferenceError(LookupError):
    """A reference in the template names something the local cloud did not create."""

    def __init__(self, logical_id: str, detail: str) -> None:
        super().__init__(f"cannot resolve a reference to {logical_id!r}: {detail}")
        self.logical_id = logical_id


@dataclass
class Physical:
    """What a created resource answers to ``Ref`` and to ``Fn::GetAtt``."""

    ref: str
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Route:
    """One API Gateway method: the resource template (``/runs/{run_id}``) and whether it needs a token."""

    resource: str
    method: str
    authorized: bool


class StackTemplate:
    """A synthesized template plus the map of logical ids to the physical resources created for it."""

    def __init__(self, body: dict[str, Any], *, region: str = "us-east-1") -> None:
        self.body = body
        self.region = region
        self.resources: dict[str, dict[str, Any]] = body.get("Resources", {})
        self.physical: dict[str, Physical] = {}

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {lid: res for lid, res in self.resources.items() if res.get("Type") == resource_type}

    def properties(self, logical_id: str) -> dict[str, Any]:
        props: dict[str, Any] = self.resources[logical_id].get("Properties", {})
        return props

    def record(self, logical_id: str, ref: str, **attributes: str) -> None:
        self.physical[logical_id] = Physical(ref, dict(attributes))

    def pseudo_parameters(self) -> dict[str, str]:
        return {
            "AWS::Partition": PARTITION,
            "AWS::Region": self.region,
            "AWS::AccountId": ACCOUNT_ID,
            "AWS::URLSuffix": URL_SUFFIX,
        }

    def resolve(self, value: Any) -> Any:
        """Return ``value`` with every intrinsic function replaced by its value."""
        if isinstance(value, list):
            return [self.resolve(item) for item in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            (key,) = value
            if key == "Ref":
                return self._ref(value[key])
            if key == "Fn::GetAtt":
                return self._get_att(value[key])
            if key == "Fn::Join":
                separator, parts = value[key]
                return str(separator).join(str(self.resolve(part)) for part in self.resolve(parts))
            if key == "Fn::Sub":
                return self._sub(value[key])
            if key == "Fn::Select":
                index, items = value[key]
                return self.resolve(items)[int(self.resolve(index))]
            if key == "Fn::Split":
                separator, text = value[key]
                return str(self.resolve(text)).split(separator)
            if key == "Fn::ImportValue":
                return self._import_value(self.resolve_str(value[key]))
            if key.startswith("Fn::"):
                raise UnresolvedReferenceError(key, "this intrinsic function is not supported locally")
        return {key: self.resolve(item) for key, item in value.items()}

    def resolve_str(self, value: Any) -> str:
        resolved = self.resolve(value)
        if not isinstance(resolved, str):
            raise TypeError(f"expected a string, the template gives {resolved!r}")
        return resolved

    def _import_value(self, export: str) -> str:
        # The application's stacks are merged before they are provisioned (infra/merge.py), which replaces
        # every import; one left here names an export no stack of the application makes.
        raise UnresolvedReferenceError(export, "no stack of the application exports it")

    def _ref(self, name: str) -> str:
        pseudo = self.pseudo_parameters()
        if name in pseudo:
            return pseudo[name]
        physical = self.physical.get(name)
        if physical is None:
            raise UnresolvedReferenceError(name, self._why_missing(name))
        return physical.ref

    def _get_att(self, target: list[str] | str) -> str:
        logical_id, attribute = target.split(".", 1) if isinstance(target, str) else target
        physical = self.physical.get(logical_id)
        if physical is None:
            raise UnresolvedReferenceError(logical_id, self._why_missing(logical_id))
        if attribute not in physical.attributes:
            raise UnresolvedReferenceError(
                logical_id,
                f"attribute {attribute!r} is not known locally (known: {sorted(physical.attributes)})",
            )
        return physical.attributes[attribute]

    def _sub(self, spec: str | list[Any]) -> str:
        if isinstance(spec, str):
            text, variables = spec, {}
        else:
            text, raw_variables = spec
            variables = {name: self.resolve(item) for name, item in raw_variables.items()}

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return str(variables[name])
            if "." in name and not name.startswith("AWS::"):
                return self._get_att(name)
            return self._ref(name)

        return _SUB_VARIABLE.sub(replace, text)

    def state_machine_definition(self, logical_id: str) -> str:
        """The definition a state machine resource deploys: its DefinitionString (or Definition) with
        its DefinitionSubstitutions made."""
        props = self.properties(logical_id)
        if "DefinitionString" in props:
            definition = self.resolve_str(props["DefinitionString"])
        else:
            definition = json.dumps(self.resolve(props["Definition"]))
        for key, value in self.resolve(props.get("DefinitionSubstitutions", {})).items():
            definition = definition.replace("${" + key + "}", str(value))
        return definition

    def _why_missing(self, logical_id: str) -> str:
        if logical_id in self.resources:
            kind = self.resources[logical_id].get("Type")
            return f"the local cloud did not create this {kind} (yet)"
        return "no such resource or parameter in the template"

    def api_routes(self) -> list[Route]:
        """The API's methods with their resource paths, from AWS::ApiGateway::Resource / Method."""
        resources = self.of_type("AWS::ApiGateway::Resource")
        routes = []
        for method in self.of_type("AWS::ApiGateway::Method").values():
            props = method.get("Properties", {})
            if props.get("Integration", {}).get("Type") not in ("AWS_PROXY", "AWS"):
                continue
            path = _resource_path(props.get("ResourceId"), resources)
            authorized = props.get("AuthorizationType", "NONE") != "NONE"
            routes.append(Route(path, str(props["HttpMethod"]).upper(), authorized))
        return sorted(routes, key=lambda route: (route.resource, route.method))

    def stage_name(self, default: str = "local") -> str:
        for stage in self.of_type("AWS::ApiGateway::Stage").values():
            name = stage.get("Properties", {}).get("StageName")
            if isinstance(name, str):
                return name
        return default


def _resource_path(resource_id: Any, resources: dict[str, dict[str, Any]]) -> str:
    parts: list[str] = []
    current = resource_id
    # The root resource is referenced as the RestApi's RootResourceId; any Ref is a child resource.
    while isinstance(current, dict) and "Ref" in current:
        resource = resources.get(current["Ref"])
        if resource is None:
            raise UnresolvedReferenceError(current["Ref"], "not an AWS::ApiGateway::Resource in the template")
        props = resource["Properties"]
        parts.append(str(props["PathPart"]))
        current = props.get("ParentId")
    return "/" + "/".join(reversed(parts))


def service_name(function: dict[str, Any]) -> str | None:
    """The function folder (``functions/<name>``) a Lambda resource runs: the one its metadata names (each
    runtime's sandbox runs ``sandbox``), else its POWERTOOLS_SERVICE_NAME."""
    # Here, not at the top: the builder and the catalog are CDK code, and importing CDK starts Node.js.
    from infra.constructs.functions import FOLDER_METADATA

    folder = function.get("Metadata", {}).get(FOLDER_METADATA)
    if isinstance(folder, str):
        return folder
    variables = function.get("Properties", {}).get("Environment", {}).get("Variables", {})
    name = variables.get(SERVICE_NAME_VARIABLE)
    return name if isinstance(name, str) else None


def function_folders() -> tuple[str, ...]:
    """The folders under functions/ that the catalog's functions run, in its order."""
    from infra.constructs.catalog import SPECS

    return tuple(dict.fromkeys(spec.folder for spec in SPECS))


def lazy_handler(name: str) -> Callable[[Any, Any], Any]:
    """A callable that imports ``functions.<name>.handler`` on first use and calls its ``handler``."""
    folders = function_folders()
    if name not in folders:
        raise ValueError(f"unknown function folder {name!r}; expected one of {', '.join(folders)}")

    def invoke(event: Any, context: Any) -> Any:
        module = importlib.import_module(f"functions.{name}.handler")
        return module.handler(event, context)

    invoke.__name__ = f"{name}_handler"
    return invoke

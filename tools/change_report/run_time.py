"""Values written at run time: the SSM parameters a function's or state machine's role may ``ssm:PutParameter``
(found from the IAM statements of the templates) and the library's run-time parameter custom resources, with who
writes each and which stack parameters read it at deploy."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tools.change_report.resource_types import RUN_TIME_PARAMETER_TYPE, SSM_PARAMETER, SSM_VALUE_TYPE, is_custom
from tools.change_report.templates import _as_list, _literal, _strip_stack, references
from tools.change_report.value_text import _as_text

if TYPE_CHECKING:
    from tools.change_report.assembly import StackTemplate


@dataclass
class RunTimeValue:
    """An SSM parameter whose value a function (or state machine) writes at run time.

    Found from the template, not from names: an ``AWS::SSM::Parameter`` is one when a function's or state
    machine's role in the assembly is allowed ``ssm:PutParameter`` on its ARN (by a reference to it or by a
    literal ARN naming it). A ``Custom::SageMakerLlmRunTimeParameter`` is one by its purpose, and keeps the
    value on update."""

    stack: str
    logical_id: str
    resource_type: str
    name: str | None
    """The parameter's name when the template fixes it (None: CloudFormation generates it)."""
    writers: list[str] = field(default_factory=list)
    """The functions and state machines allowed to write it."""
    readers: list[str] = field(default_factory=list)
    """``Stack.Parameter`` of every ``AWS::SSM::Parameter::Value<...>`` stack parameter that reads it at deploy."""

    @property
    def keeps_on_update(self) -> bool:
        return self.resource_type == RUN_TIME_PARAMETER_TYPE

    @property
    def shown(self) -> str:
        return self.name or f"the parameter of {self.logical_id} (a generated name)"


def _parameter_resources(assembly: dict[str, StackTemplate]) -> dict[tuple[str, str], RunTimeValue]:
    found = {}
    for key, stack in assembly.items():
        for logical_id, resource in stack.resources.items():
            kind = resource.get("Type", "")
            properties = resource.get("Properties") or {}
            if kind == SSM_PARAMETER:
                name = _literal(properties.get("Name"))
            elif kind == RUN_TIME_PARAMETER_TYPE:
                name = _literal(properties.get("ParameterName"))
            else:
                continue
            found[(key, logical_id)] = RunTimeValue(stack.title, logical_id, kind, name)
    return found


def _statements(document: Any) -> list[dict[str, Any]]:
    statements = (document or {}).get("Statement", []) if isinstance(document, dict) else []
    return [s for s in _as_list(statements) if isinstance(s, dict)]


def _grants(stack: StackTemplate) -> Iterator[tuple[dict[str, Any], list[str]]]:
    """(statement, role logical ids) of every IAM policy statement attached to a role of ``stack``."""
    managed_users: dict[str, list[str]] = {}
    for logical_id, resource in stack.resources.items():
        if resource.get("Type") == "AWS::IAM::Role":
            for _, ref in references((resource.get("Properties") or {}).get("ManagedPolicyArns")):
                managed_users.setdefault(ref, []).append(logical_id)
    for logical_id, resource in stack.resources.items():
        kind, properties = resource.get("Type"), resource.get("Properties") or {}
        if kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            roles = [ref for _, ref in references(properties.get("Roles"))] + managed_users.get(logical_id, [])
            for statement in _statements(properties.get("PolicyDocument")):
                yield statement, roles
        elif kind == "AWS::IAM::Role":
            for policy in _as_list(properties.get("Policies") or []):
                for statement in _statements((policy or {}).get("PolicyDocument")):
                    yield statement, [logical_id]


_FRAMEWORK_HANDLERS = ("USER_ON_EVENT_FUNCTION_ARN", "USER_IS_COMPLETE_FUNCTION_ARN")
"""Environment variables through which CDK's custom resource framework names the handlers it calls."""


def _deploy_time_functions(stack: StackTemplate) -> set[str]:
    """Functions that run only while CloudFormation deploys: custom resource handlers (by ServiceToken, or called
    by CDK's provider framework)."""
    found = set()
    for resource in stack.resources.values():
        properties = resource.get("Properties") or {}
        if is_custom(resource.get("Type", "")):
            found |= {ref for _, ref in references(properties.get("ServiceToken"))}
        variables = (
            ((properties.get("Environment") or {}).get("Variables") or {})
            if isinstance(properties.get("Environment"), dict)
            else {}
        )
        for name in _FRAMEWORK_HANDLERS:
            found |= {ref for _, ref in references(variables.get(name))}
    return found


def _role_users(stack: StackTemplate) -> dict[str, list[str]]:
    """Role logical id -> the functions and state machines of ``stack`` that run with it at run time."""
    users: dict[str, list[str]] = {}
    deploy_time = _deploy_time_functions(stack)
    for logical_id, resource in stack.resources.items():
        kind, properties = resource.get("Type"), resource.get("Properties") or {}
        role = {"AWS::Lambda::Function": "Role", "AWS::StepFunctions::StateMachine": "RoleArn"}.get(str(kind))
        if role is None or logical_id in deploy_time:
            continue
        shown = _strip_stack((resource.get("Metadata") or {}).get("aws:cdk:path", ""), stack.title) or logical_id
        for _, ref in references(properties.get(role)):
            users.setdefault(ref, []).append(shown)
    return users


def _allows(statement: dict[str, Any], action: str) -> bool:
    actions = [str(a).lower() for a in _as_list(statement.get("Action") or [])]
    return statement.get("Effect") == "Allow" and any(fnmatch.fnmatchcase(action.lower(), a) for a in actions)


def _granted_parameters(
    resource: Any, key: str, parameters: dict[tuple[str, str], RunTimeValue]
) -> set[tuple[str, str]]:
    """The parameters an IAM ``Resource`` entry covers: one it references, or those a literal ARN pattern names."""
    hits = {(key, ref) for _, ref in references(resource) if (key, ref) in parameters}
    text = _as_text(resource)
    if text == "*":
        return set(parameters)
    if text is None or ":parameter" not in text:
        return hits
    pattern = re.sub(r"\$\{[^}]*\}", "*", text.split(":parameter", 1)[1]).lstrip("/")
    if hits and not pattern.strip("*/"):
        return hits  # "parameter/${Ref}": the reference says which
    return hits | {k for k, p in parameters.items() if p.name and fnmatch.fnmatchcase(p.name.lstrip("/"), pattern)}


def run_time_values(assembly: dict[str, StackTemplate]) -> dict[tuple[str, str], RunTimeValue]:
    """(stack key, logical id) -> the run-time value the resource holds, for every such parameter in ``assembly``."""
    parameters = _parameter_resources(assembly)
    for key, stack in assembly.items():
        users = _role_users(stack)
        for statement, roles in _grants(stack):
            writers = [u for role in roles for u in users.get(role, [])]
            if not writers or not _allows(statement, "ssm:PutParameter"):
                continue
            for resource in _as_list(statement.get("Resource") or []):
                for hit in _granted_parameters(resource, key, parameters):
                    parameters[hit].writers += [w for w in writers if w not in parameters[hit].writers]
        for name, parameter in stack.parameters.items():
            if str(parameter.get("Type", "")).startswith(SSM_VALUE_TYPE):
                for value in parameters.values():
                    if value.name and value.name == parameter.get("Default"):
                        value.readers.append(f"{stack.title}.{name}")
    return {k: v for k, v in parameters.items() if v.writers or v.keeps_on_update}

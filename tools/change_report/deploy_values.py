"""An assembly as CloudFormation deploys it with given stack parameter values (``at_deploy``): references to the
parameters substituted, the conditions that depend only on them decided, ``Fn::If`` branches picked and resources
whose condition is false left out."""

from __future__ import annotations

import fnmatch
from typing import Any

from tools.change_report.assembly import StackTemplate
from tools.change_report.resource_types import SSM_VALUE_TYPE

_NO_VALUE: Any = object()


def at_deploy(assembly: dict[str, StackTemplate], values: dict[str, str] | None) -> dict[str, StackTemplate]:
    """``assembly`` as CloudFormation deploys it with these stack parameter values: ``values`` maps a parameter's
    logical name, or for an ``AWS::SSM::Parameter::Value<...>`` parameter the SSM name it defaults to (a glob
    pattern such as ``*/capacity-plans/*chat/status`` may stand for it), to its value.

    A ``Ref`` to a given parameter becomes the value, conditions that depend only on given values are decided,
    ``Fn::If`` on them picks its branch, ``AWS::NoValue`` leaves its place, and resources (and outputs) whose
    condition is false leave the template. What depends on a parameter without a value stays as written, so a
    change that only flips an SSM value at deploy (a plan's status, a promoted EAGLE head) can be compared."""
    if not values:
        return assembly
    resolved: dict[str, StackTemplate] = {}
    for key, stack in assembly.items():
        known = {}
        for name, parameter in stack.parameters.items():
            default = parameter.get("Default")
            if name in values:
                known[name] = values[name]
            elif str(parameter.get("Type", "")).startswith(SSM_VALUE_TYPE) and isinstance(default, str):
                given = [v for k, v in values.items() if fnmatch.fnmatchcase(default, k)]
                if given:
                    known[name] = given[0]
        if not known:
            resolved[key] = stack
            continue
        decided = _decide_conditions(stack.conditions, known)
        resolved[key] = StackTemplate(
            stack.key,
            stack.title,
            _kept(stack.resources, known, decided),
            stack.parent,
            stack.parent_logical_id,
            _kept(stack.outputs, known, decided),
            stack.parameters,
            stack.conditions,
            stack.environment,
            stack.dependencies,
        )
    return resolved


def _kept(
    items: dict[str, dict[str, Any]], known: dict[str, str], decided: dict[str, bool]
) -> dict[str, dict[str, Any]]:
    """The resources (or outputs) whose condition is not decided false, with the known values substituted."""
    return {
        k: _substitute(v, known, decided) for k, v in items.items() if decided.get(str(v.get("Condition"))) is not False
    }


def _decide_conditions(conditions: dict[str, Any], known: dict[str, str]) -> dict[str, bool]:
    decided: dict[str, bool] = {}
    progress = True
    while progress:
        progress = False
        for name, expression in conditions.items():
            if name not in decided:
                value = _condition(expression, known, decided)
                if value is not None:
                    decided[name] = value
                    progress = True
    return decided


def _condition(expression: Any, known: dict[str, str], decided: dict[str, bool]) -> bool | None:
    """True or False when ``expression`` (a condition function) depends only on known values, else None."""
    if not isinstance(expression, dict) or len(expression) != 1:
        return None
    ((kind, arg),) = expression.items()
    if kind == "Condition":
        return decided.get(str(arg))
    if kind == "Fn::Equals" and isinstance(arg, list) and len(arg) == 2:
        a, b = (_substitute(v, known, decided) for v in arg)
        return None if isinstance(a, (dict, list)) or isinstance(b, (dict, list)) else str(a) == str(b)
    parts = [_condition(v, known, decided) for v in (arg if isinstance(arg, list) else [arg])]
    if kind == "Fn::Not" and len(parts) == 1:
        return None if parts[0] is None else not parts[0]
    if kind == "Fn::And":
        return False if False in parts else (None if None in parts else True)
    if kind == "Fn::Or":
        return True if True in parts else (None if None in parts else False)
    return None


def _substitute(value: Any, known: dict[str, str], decided: dict[str, bool]) -> Any:
    if isinstance(value, list):
        items = [_substitute(v, known, decided) for v in value]
        return [v for v in items if v is not _NO_VALUE]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((kind, arg),) = value.items()
        if kind == "Ref" and arg in known:
            return known[arg]
        if kind == "Ref" and arg == "AWS::NoValue":
            return _NO_VALUE
        if kind == "Fn::If" and isinstance(arg, list) and len(arg) == 3 and str(arg[0]) in decided:
            return _substitute(arg[1] if decided[str(arg[0])] else arg[2], known, decided)
    substituted = {k: _substitute(v, known, decided) for k, v in value.items()}
    return {k: v for k, v in substituted.items() if v is not _NO_VALUE}

"""Reading policy documents as the policy guard sees them in a template.

A statement's values are read the way IAM reads them: one value or a list (``_as_list``), any ``Effect``
but ``Deny`` an ``Allow`` (``_effect``), action names without regard to case, ``*`` and ``?`` patterns
(``_matches``, ``_wild``), and only the condition keys that a positive operator limits to wildcard-free values
(``_condition_keys``). A resolved CloudFormation value is written as cdk-nag writes it in a finding id
(``render``); a document held as JSON text (plain, or an ``Fn::Join``/``Fn::Sub`` of it) is parsed
(``_parsed``).

What the guard cannot read is never skipped (``_read_statements``, ``unreadable``): a document or statement
that is not an object, a ``Statement`` item that is an intrinsic (an ``Fn::If`` is read as both of its branches
when both are literal statements or ``AWS::NoValue``), and a value chosen at deploy time anywhere in a
statement (``Fn::FindInMap``, ``Fn::ImportValue``, a ``Ref`` to a template parameter, or ``${Param}`` in an
``Fn::Sub``). A ``Ref`` to a resource or a pseudo parameter is a concrete ARN or name, never a wildcard, and is
read. A ``Ref`` to a parameter is read only when its ``AllowedValues`` hold no wildcard (``*`` or ``?``) and it
is not an SSM parameter type: its ``Default`` alone does not count, since the deployer can pass any value.
"""

from __future__ import annotations

import json
import re
import re._parser as sre_parse  # type: ignore[import-not-found]  # the standard library's own regex parser
from collections.abc import Mapping
from typing import Any


def render(value: Any) -> str:
    """A resolved CloudFormation value as cdk-nag writes it in a finding id (``Ref`` -> ``<X>``, joins joined)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((kind, arg),) = value.items()
        if kind == "Ref":
            return f"<{arg}>"
        if kind == "Fn::GetAtt":
            return f"<{arg[0]}.{arg[1]}>" if isinstance(arg, list) else f"<{arg}>"
        if kind == "Fn::Join" and isinstance(arg, list) and len(arg) == 2 and isinstance(arg[1], list):
            return str(arg[0]).join(render(part) for part in arg[1])
    # Any other intrinsic (Fn::Sub, Fn::Select, Fn::FindInMap, ...): cdk-nag writes it as compact JSON.
    return json.dumps(value, separators=(",", ":"))


def _arn_text(value: Any) -> str:
    """``render``, with ``Fn::Sub`` written out (``${AWS::Partition}`` -> ``<AWS::Partition>``): for reading ARNs."""
    if isinstance(value, dict) and list(value) == ["Fn::Sub"]:
        body = value["Fn::Sub"]
        text = body[0] if isinstance(body, list) and body else body
        if isinstance(text, str):
            return re.sub(r"\$\{([^}!]+)\}", r"<\1>", text)
    return render(value)


def _wild(text: str) -> bool:
    """Whether ``text`` is an IAM pattern: ``?`` is a wildcard like ``*``."""
    return "*" in text or "?" in text


def _broad_action(action: str) -> bool:
    """``*``, ``<service>:*`` and the same written with ``?`` (``s3:?*``, ``*:*``): every action of a service."""
    service, _, name = action.rpartition(":")
    if _wild(service) or (not service and _wild(name) and not name.strip("*?")):
        return True
    return "*" in name and not name.strip("*?")


_POSITIVE = frozenset(
    {
        "stringequals",
        "stringequalsignorecase",
        "stringlike",
        "arnequals",
        "arnlike",
        "numericequals",
        "dateequals",
    }
)
"""Condition operators that hold only for the values they list (``StringNotEquals`` holds for every other one)."""


def _limits(operator: str, value: Any) -> bool:
    text = _arn_text(value)
    if not isinstance(value, (str, dict)) or text == "":
        return False
    if operator.startswith("arn"):  # ArnLike may name a family of resources, but of one account
        fields = re.sub(r"<[^<>]*>", lambda m: m.group(0).replace(":", "."), text).split(":", 5)  # <AWS::Partition>
        if len(fields) < 6 or _wild(fields[4]):
            return False
        return fields[4] != "" or not _wild(fields[5])  # no account (S3): the resource must be named
    return not _wild(text)


def _condition_keys(statement: Mapping[str, Any], *, exact: bool = True) -> set[str]:
    """Condition keys of ``statement`` that limit it: under a positive operator (``StringEquals``, ``ArnLike``,
    ...; not ``...IfExists``, ``Null``, ``...Not...`` or ``ForAllValues:``, which holds when the key is absent),
    every value wildcard-free (``*`` or ``?``), and an ARN operator's values naming their account. ``exact=False``
    (a wildcard-only action's condition, such as ``cloudwatch:namespace``): a pattern narrows too, only ``*`` does
    not."""
    keys: set[str] = set()
    condition = statement.get("Condition")
    if not isinstance(condition, dict):
        return keys
    for operator, body in condition.items():
        name = str(operator).lower().removeprefix("foranyvalue:")
        if not isinstance(body, dict) or name not in _POSITIVE:
            continue
        for key, value in body.items():
            values = _as_list(value)
            loose = not exact and all(isinstance(v, str) and v.strip("*") for v in values)
            if values and (loose or all(_limits(name, v) for v in values)):
                keys.add(str(key).lower())
    return keys


def _matches(text: str, pattern: str) -> bool:
    """IAM's pattern match: ``*`` any run of characters, ``?`` one; nothing else is special."""
    if text == pattern:
        return True
    if "*" not in pattern and "?" not in pattern:
        return False
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, text, flags=re.DOTALL) is not None


def _parsed(document: Any) -> Any:
    """``document``, with JSON text parsed (``AWS::Logs::ResourcePolicy`` and others hold the policy as text, and
    CDK writes text with tokens as ``Fn::Join``); ``None`` when it is text that is not JSON."""
    if isinstance(document, dict) and len(document) == 1 and next(iter(document)) in ("Fn::Join", "Fn::Sub"):
        text = _arn_text(document)
        if text.lstrip().startswith("{"):
            document = text
    if isinstance(document, str):
        try:
            return json.loads(document)
        except ValueError:
            return None
    return document


def _statements(document: Any) -> list[dict[str, Any]]:
    return [s for _, s in _numbered(document)]


def _numbered(document: Any) -> list[tuple[int, dict[str, Any]]]:
    if not isinstance(document, dict):
        return []
    return [(i, s) for i, s in enumerate(_as_list(document.get("Statement"))) if isinstance(s, dict)]


def _effect(statement: Mapping[str, Any]) -> str:
    return "Deny" if statement.get("Effect") == "Deny" else "Allow"  # IAM has no default: read anything else as Allow


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


# ------------------------------------------------------------------ what the guard cannot read
_DEPLOY_TIME = ("Fn::FindInMap", "Fn::ImportValue")
_READ_KEYS = ("Effect", "Action", "NotAction", "Resource", "NotResource", "Principal", "NotPrincipal", "Condition")


def _intrinsic(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and len(value) == 1
        and (next(iter(value)) == "Ref" or next(iter(value)).startswith("Fn::"))
    )


def _parameter_problem(name: str, parameter: Any) -> str | None:
    """Why a ``Ref`` to the template parameter ``name`` may hide a wildcard, or ``None`` when it cannot."""
    declared = parameter if isinstance(parameter, dict) else {}
    kind = str(declared.get("Type", ""))
    if kind.startswith("AWS::SSM::Parameter::"):
        return f"a Ref to the template parameter {name!r}, read from SSM at deploy time"
    allowed = declared.get("AllowedValues")
    if isinstance(allowed, list) and allowed and all(isinstance(v, str) and not _wild(v) for v in allowed):
        return None
    pattern = declared.get("AllowedPattern")
    if isinstance(pattern, str) and pattern_excludes_wildcards(pattern):
        return None
    default = f"Default {declared['Default']!r}" if "Default" in declared else "no Default"
    return (
        f"a Ref to the template parameter {name!r}, chosen at deploy time ({default}; no AllowedValues or "
        "AllowedPattern that rule out a wildcard)"
    )


_WILDCARD_CODES = (ord("*"), ord("?"))


def pattern_excludes_wildcards(pattern: str) -> bool:
    """Whether no value the regular expression ``pattern`` matches can hold ``*`` or ``?``: every character it may
    match is a literal or a class member other than those two (``.``, negated classes and ``\\S``/``\\W``/``\\D``
    could match them). Unparsable patterns do not count."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError):
        return False
    safe_categories = {sre_parse.CATEGORY_DIGIT, sre_parse.CATEGORY_WORD, sre_parse.CATEGORY_SPACE}

    def safe(items: Any) -> bool:
        for op, argument in items:
            if op is sre_parse.LITERAL:
                if argument in _WILDCARD_CODES:
                    return False
            elif op is sre_parse.IN:
                if not all(_safe_member(o, a, safe_categories) for o, a in argument):
                    return False
            elif op in (sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT, sre_parse.POSSESSIVE_REPEAT):
                if not safe(argument[2]):
                    return False
            elif op is sre_parse.SUBPATTERN:
                if not safe(argument[3]):
                    return False
            elif op is sre_parse.BRANCH:
                if not all(safe(branch) for branch in argument[1]):
                    return False
            elif op is sre_parse.ATOMIC_GROUP:
                if not safe(argument):
                    return False
            elif op is not sre_parse.AT:  # ANY, NOT_LITERAL, GROUPREF, assertions...: could match a wildcard
                return False
        return True

    return safe(parsed)


def _safe_member(op: Any, argument: Any, safe_categories: set[Any]) -> bool:
    if op is sre_parse.LITERAL:
        return argument not in _WILDCARD_CODES
    if op is sre_parse.RANGE:
        low, high = argument
        return not any(low <= code <= high for code in _WILDCARD_CODES)
    if op is sre_parse.CATEGORY:
        return argument in safe_categories
    return False  # NEGATE and anything else


MAPPINGS = "\x00Mappings"
"""The key under which ``unreadable``'s ``parameters`` may carry the template's ``Mappings``."""


def _mapping_is_literal(arg: Any, parameters: Mapping[str, Any]) -> bool:
    """Whether ``Fn::FindInMap`` ``arg`` names a mapping the template holds whose every value it may pick (any
    top-level key, the named second key or any) is a wildcard-free string: then it is as readable as a literal."""
    mapping = (parameters.get(MAPPINGS) or {}).get(arg[0]) if isinstance(arg, list) and len(arg) >= 3 else None
    if not isinstance(arg, list) or not isinstance(mapping, dict) or not isinstance(arg[0], str):
        return False
    values = [
        value
        for row in mapping.values()
        if isinstance(row, dict)
        for key, value in row.items()
        if not isinstance(arg[2], str) or key == arg[2]
    ]
    return bool(values) and all(isinstance(v, str) and not _wild(v) for v in values)


def unreadable(value: Any, parameters: Mapping[str, Any]) -> list[str]:
    """What in ``value`` is chosen at deploy time and may be a wildcard (``Fn::FindInMap``, ``Fn::ImportValue``, a
    ``Ref`` or ``${...}`` to a template parameter ``_parameter_problem`` refuses), each with why."""
    found: list[str] = []

    def walk(item: Any) -> None:
        if isinstance(item, list):
            for part in item:
                walk(part)
            return
        if not isinstance(item, dict):
            return
        if len(item) == 1:
            ((kind, arg),) = item.items()
            if kind == "Fn::FindInMap" and _mapping_is_literal(arg, parameters):
                return
            if kind in _DEPLOY_TIME:
                found.append(f"{render(item)} ({kind}: chosen at deploy time)")
                return
            if kind == "Ref" and isinstance(arg, str):
                why = _parameter_problem(arg, parameters[arg]) if arg in parameters else None
                if why:
                    found.append(f"{render(item)} ({why})")
                return
            if kind == "Fn::Sub":
                text, variables = (arg[0], arg[1:2]) if isinstance(arg, list) and arg else (arg, [])
                given = variables[0] if variables and isinstance(variables[0], dict) else {}
                for name in re.findall(r"\$\{([^}!.]+)\}", text if isinstance(text, str) else ""):
                    why = (
                        _parameter_problem(name, parameters[name]) if name in parameters and name not in given else None
                    )
                    if why:
                        found.append(f"{render(item)} ({why})")
                walk(list(given.values()))
                return
        walk(list(item.values()))

    walk(value)
    return found


def _branches(value: Any, label: str = "") -> list[tuple[str, Any]] | None:
    """The values ``value`` may take: itself, or the branches of an ``Fn::If`` (nested ones too, ``AWS::NoValue``
    dropped), each labelled with its path (``.Fn::If[1]``); ``None`` when it is any other intrinsic."""
    if isinstance(value, dict) and list(value) == ["Fn::If"]:
        arg = value["Fn::If"]
        if not (isinstance(arg, list) and len(arg) == 3):
            return None
        out: list[tuple[str, Any]] = []
        for n in (1, 2):
            if arg[n] == {"Ref": "AWS::NoValue"}:
                continue
            branch = _branches(arg[n], f"{label}.Fn::If[{n}]")
            if branch is None:
                return None
            out += branch
        return out
    return None if _intrinsic(value) else [(label, value)]


def _read_statements(document: Any) -> tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, str]]]:
    """The statements of ``document`` (label such as ``Statement[0]`` or ``Statement[1].Fn::If[2]``, statement) and
    what of it the guard cannot read (label relative to the document, ``""`` for the document itself, text)."""
    if document is None:
        return [], []
    parsed = _parsed(document)
    if parsed is None:
        return [], [("", f"is text the guard cannot read as a JSON policy document ({render(document)[:120]})")]
    documents = _branches(parsed)
    if documents is None:
        return [], [("", f"is {render(parsed)[:160]}, which the guard cannot read as a policy document")]
    statements: list[tuple[str, dict[str, Any]]] = []
    problems: list[tuple[str, str]] = []
    for prefix, body in documents:
        at = prefix.lstrip(".")
        if not isinstance(body, dict):
            problems.append((at, f"is {render(body)[:160]}, not a policy document"))
            continue
        raw = body.get("Statement")
        items = _branches(raw, ".Statement")
        if items is None:
            problems.append(((at + ".Statement").lstrip("."), f"is {render(raw)[:160]}, which the guard cannot read"))
            continue
        for list_label, value in items:
            for i, item in enumerate(_as_list(value)):
                base = f"{at}{list_label}[{i}]".lstrip(".")
                branches = _branches(item, base)
                for label, statement in branches if branches is not None else [(base, None)]:
                    if isinstance(statement, dict) and not _intrinsic(statement):
                        statements.append((label, statement))
                    else:
                        problems.append((label, f"is {render(item)[:160]}, not a statement the guard can read"))
    return statements, problems


def statement_unreadable(statement: Mapping[str, Any], parameters: Mapping[str, Any]) -> list[str]:
    """What of one statement's ``Effect``, ``Action``, ``Resource``, ``Principal`` and ``Condition`` (and their
    ``Not...``) the guard cannot read, one line each."""
    lines = []
    for key in _READ_KEYS:
        found = unreadable(statement.get(key), parameters)
        if found:
            lines.append(f"{key} holds {'; '.join(found)}: the guard cannot read what it allows")
    condition = statement.get("Condition")
    if condition is not None and not isinstance(condition, dict):
        lines.append(f"Condition is {render(condition)[:160]}, not an object of operators")
    return lines

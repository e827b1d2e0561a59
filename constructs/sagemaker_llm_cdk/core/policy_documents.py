"""Reading policy documents as the policy guard sees them in a template.

A statement's values are read the way IAM reads them: one value or a list (``_as_list``), any ``Effect``
but ``Deny`` an ``Allow`` (``_effect``), action names without regard to case, ``*`` and ``?`` patterns
(``_matches``), and only the condition keys that limit a statement (``_condition_keys``). A resolved
CloudFormation value is written as cdk-nag writes it in a finding id (``render``); a document held as
JSON text is parsed (``_parsed``).
"""

from __future__ import annotations

import json
import re
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


def _broad_action(action: str) -> bool:
    return action == "*" or action.endswith(":*")


def _condition_keys(statement: Mapping[str, Any]) -> set[str]:
    """Condition keys of ``statement`` that limit it: not under ``...IfExists`` or ``Null``, no value ``*``."""
    keys: set[str] = set()
    for operator, body in (statement.get("Condition") or {}).items():
        if not isinstance(body, dict) or str(operator).endswith("IfExists") or operator == "Null":
            continue
        for key, value in body.items():
            if all(render(v) not in ("*", "") for v in _as_list(value)) and _as_list(value):
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
    if isinstance(document, str):  # AWS::Logs::ResourcePolicy and others hold the policy as JSON text
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

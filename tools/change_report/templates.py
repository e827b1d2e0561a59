"""Template values as a deployment sees them: a resource normalized to the parts a deploy acts on (asset hashes
masked, IAM statement lists sorted, CDK metadata left out), the marker of an absent value, property paths as text,
the references (``Ref``, ``Fn::GetAtt``, ``Fn::Sub``) a value makes, and the endpoints that reference an endpoint
config."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from tools.change_report.resource_types import ENDPOINT

if TYPE_CHECKING:
    from tools.change_report.assembly import StackTemplate


IGNORED_METADATA = frozenset({"checkov", "cdk_nag", "cfn_nag", "guard"})
ATTRIBUTES = ("DeletionPolicy", "UpdateReplacePolicy", "Condition", "UpdatePolicy", "CreationPolicy")
_FILE_ASSET = re.compile(r"\b[0-9a-f]{64}(?=\.[a-z])")
_IMAGE_ASSET = re.compile(r"(container-assets.*:)[0-9a-f]{64}\b")

_UNORDERED_IN_STATEMENT = ("Action", "NotAction", "Resource", "NotResource")


class _Missing:
    def __repr__(self) -> str:
        return "(absent)"


MISSING: Any = _Missing()


def _mask(value: Any) -> Any:
    """``value`` with asset hashes masked and the unordered lists of IAM policy statements sorted."""
    if isinstance(value, str):
        return _IMAGE_ASSET.sub(r"\1<asset-hash>", _FILE_ASSET.sub("<asset-hash>", value))
    if isinstance(value, list):
        return [_mask(v) for v in value]
    if isinstance(value, dict):
        masked = {k: _mask(v) for k, v in value.items()}
        if "Effect" in masked:  # an IAM policy statement: the order of actions and resources means nothing
            for key in _UNORDERED_IN_STATEMENT:
                if isinstance(masked.get(key), list):
                    masked[key] = sorted(masked[key], key=lambda v: json.dumps(v, sort_keys=True))
        return masked
    return value


def normalize(resource: dict[str, Any]) -> dict[str, Any]:
    """The parts of a resource that a deployment acts on, asset hashes masked."""
    out: dict[str, Any] = {"Type": resource.get("Type"), "Properties": _mask(resource.get("Properties") or {})}
    for attribute in ATTRIBUTES:
        if attribute in resource:
            out[attribute] = resource[attribute]
    metadata = {
        k: v
        for k, v in (resource.get("Metadata") or {}).items()
        if not k.startswith(("aws:cdk:", "aws:asset:")) and k not in IGNORED_METADATA
    }
    if metadata:
        out["Metadata"] = _mask(metadata)
    return out


def _is_intrinsic(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and len(value) == 1
        and next(iter(value)) in ("Ref", "Condition")
        or (isinstance(value, dict) and len(value) == 1 and next(iter(value)).startswith("Fn::"))
    )


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _literal(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def render_path(path: Iterable[Any]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def references(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    """(path, logical id or parameter) for every Ref, Fn::GetAtt and Fn::Sub reference in ``value``."""
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref" and isinstance(arg, str) and not arg.startswith("AWS::"):
                yield path, arg
                return
            if key == "Fn::GetAtt":
                target = arg[0] if isinstance(arg, list) else str(arg).split(".")[0]
                yield path, target
                return
            if key == "Fn::Sub":
                template = arg[0] if isinstance(arg, list) else arg
                for name in re.findall(r"\$\{([^!}][^}]*)\}", str(template)):
                    if not name.startswith("AWS::"):
                        yield path, name.split(".")[0]
        for k, v in value.items():
            yield from references(v, path if k.startswith("Fn::") or k == "Ref" else path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from references(v, path + (i,))


def _strip_stack(path: str, title: str) -> str:
    path = path[len(title) + 1 :] if path.startswith(title + "/") else path
    return path[: -len("/Resource")] if path.endswith("/Resource") else path


def _endpoints_using(stack: StackTemplate | None, config_id: str) -> list[str]:
    if stack is None:
        return []
    found = []
    for logical_id, resource in stack.resources.items():
        if resource.get("Type") == ENDPOINT and any(
            ref == config_id for _, ref in references((resource.get("Properties") or {}).get("EndpointConfigName"))
        ):
            path = (resource.get("Metadata") or {}).get("aws:cdk:path", "")
            shown = _strip_stack(path, stack.title)
            found.append(f"{shown} ({logical_id})" if shown else logical_id)
    return found

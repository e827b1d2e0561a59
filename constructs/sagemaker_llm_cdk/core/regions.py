"""Facts about AWS regions a deploy depends on: partition, CloudFormation resource types, image and layer accounts.

Pure data and lookups (botocore and cfn-lint's data files, no CDK), used by ``preflight``:

* the partition of a region (``aws``, ``aws-cn``, ``aws-us-gov``), from botocore's endpoint data;
* the CloudFormation resource types a region supports, from the per-region provider schemas
  that cfn-lint ships (``cfnlint/data/schemas/providers/<region>.json``; cfn-lint refreshes them
  from CloudFormation's registry each release);
* the ECR account that publishes the AWS Deep Learning Containers (the LMI image) in a region,
  and the account that publishes the Powertools for AWS Lambda (Python) layer in a partition.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

SUPPORTED_PARTITIONS = ("aws", "aws-cn", "aws-us-gov")
"""Partitions this library's stacks are written for."""

URL_SUFFIX = {"aws": "amazonaws.com", "aws-cn": "amazonaws.com.cn", "aws-us-gov": "amazonaws.com"}
"""``AWS::URLSuffix`` per partition (ECR registry host names end with it)."""

DLC_ACCOUNTS: Mapping[str, str] = {
    # AWS Deep Learning Containers (LMI / djl-inference) registry account per region: AWS's DLC
    # "Region Availability" page and the SageMaker Python SDK's image_uri_config/djl-lmi.json.
    "us-east-1": "763104351884",
    "us-east-2": "763104351884",
    "us-west-1": "763104351884",
    "us-west-2": "763104351884",
    "ap-south-1": "763104351884",
    "ap-northeast-1": "763104351884",
    "ap-northeast-2": "763104351884",
    "ap-southeast-1": "763104351884",
    "ap-southeast-2": "763104351884",
    "ca-central-1": "763104351884",
    "eu-central-1": "763104351884",
    "eu-north-1": "763104351884",
    "eu-west-1": "763104351884",
    "eu-west-2": "763104351884",
    "eu-west-3": "763104351884",
    "sa-east-1": "763104351884",
    "af-south-1": "626614931356",
    "ap-east-1": "871362719292",
    "ap-east-2": "975050140332",
    "ap-northeast-3": "364406365360",
    "ap-south-2": "772153158452",
    "ap-southeast-3": "907027046896",
    "ap-southeast-4": "457447274322",
    "ap-southeast-5": "550225433462",
    "ap-southeast-7": "590183813437",
    "ca-west-1": "204538143572",
    "eu-south-1": "692866216735",
    "il-central-1": "780543022126",
    "me-central-1": "914824155844",
    "me-south-1": "217643126080",
    "eu-central-2": "380420809688",
    "eu-south-2": "503227376785",
    "cn-north-1": "727897471807",
    "cn-northwest-1": "727897471807",
    "us-gov-east-1": "446045086412",
    "us-gov-west-1": "442386744353",
}
"""Regions missing here are not known to publish the LMI image: the constructs refuse them, preflight warns
(check AWS's DLC page). The constructs read this table through ``images.DLC_ACCOUNTS``."""

POWERTOOLS_ACCOUNTS: Mapping[str, str] = {"aws": "017000801446"}
"""Account that publishes the public Powertools for AWS Lambda (Python) layer, per partition.

Only the commercial partition's account is recorded: Powertools publishes China and GovCloud
layers from other accounts, which this library does not name (preflight reports a blocker there).
"""

IGNORED_RESOURCE_TYPES = ("AWS::CDK::Metadata",)
"""Types CloudFormation handles without a registry schema (CDK's metadata resource)."""

_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")


@functools.cache  # botocore parses its whole endpoints.json for each new session: once per region is enough
def partition_of(region: str) -> str | None:
    """The partition of ``region`` (``aws``, ``aws-cn``, ``aws-us-gov``, ...), or None when botocore does not know
    it."""
    import botocore.session

    if not _REGION.match(region):
        return None
    try:
        return str(botocore.session.get_session().get_partition_for_region(region))
    except Exception:  # botocore.exceptions.UnknownRegionError
        return None


def schemas_dir() -> Path | None:
    """cfn-lint's per-region provider schema folder, or None when cfn-lint is not installed."""
    import importlib.util

    spec = importlib.util.find_spec("cfnlint")  # located, not imported: its data files are all this needs
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "data" / "schemas" / "providers"
    return folder if folder.is_dir() else None


def schema_regions() -> frozenset[str]:
    """Regions cfn-lint has a resource-type list for."""
    folder = schemas_dir()
    if folder is None:
        return frozenset()
    return frozenset(p.stem for p in folder.glob("*.json") if _REGION.match(p.stem))


@functools.cache
def resource_types(region: str) -> frozenset[str] | None:
    """The CloudFormation resource types ``region`` supports (cfn-lint's data), or None when unknown."""
    folder = schemas_dir()
    if folder is None or not _REGION.match(region):
        return None
    path = folder / f"{region}.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return frozenset(data)


def regions_with(resource_type: str) -> list[str]:
    """Regions (in cfn-lint's data) whose CloudFormation supports ``resource_type``, sorted."""
    return sorted(r for r in schema_regions() if resource_type in (resource_types(r) or ()))


def checked_type(resource_type: str) -> bool:
    """Whether a template type is a registry resource type to look up (not a custom resource or CDK metadata)."""
    return not (resource_type.startswith("Custom::") or resource_type in IGNORED_RESOURCE_TYPES)


# ------------------------------------------------------------------ templates
def template_files(cdk_out: str | Path) -> list[Path]:
    """Every CloudFormation template in a cloud assembly (nested stacks and pipeline stages included)."""
    root = Path(cdk_out)
    return sorted(root.rglob("*.template.json"))


def load_templates(cdk_out: str | Path) -> dict[str, dict[str, Any]]:
    """``{relative path: template}`` of every template under ``cdk_out``."""
    root = Path(cdk_out)
    return {str(p.relative_to(root)): json.loads(p.read_text(encoding="utf-8")) for p in template_files(root)}


def resources_of(templates: Mapping[str, Mapping[str, Any]]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """(template name, logical id, resource) of every resource in ``templates``."""
    for name, template in templates.items():
        resources = template.get("Resources") if isinstance(template, Mapping) else None
        if not isinstance(resources, Mapping):
            continue
        for logical_id, resource in resources.items():
            if isinstance(resource, Mapping) and isinstance(resource.get("Type"), str):
                yield name, logical_id, resource


def resource_types_used(templates: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """``{resource type: [template/logical id, ...]}`` for the registry types the templates use."""
    used: dict[str, list[str]] = {}
    for name, logical_id, resource in resources_of(templates):
        if checked_type(resource["Type"]):
            used.setdefault(resource["Type"], []).append(f"{name}/{logical_id}")
    return used


def render(value: Any, *, region: str, partition: str, account: str | None = None) -> str | None:
    """A template value as a string with pseudo parameters filled in, or None when it depends on anything else.

    Understands plain strings, ``Ref`` to ``AWS::Region``/``AWS::Partition``/``AWS::URLSuffix``/
    ``AWS::AccountId``, ``Fn::Join`` and ``Fn::Sub`` (a string, without variables of its own).
    """
    pseudo = {
        "AWS::Region": region,
        "AWS::Partition": partition,
        "AWS::URLSuffix": URL_SUFFIX.get(partition, "amazonaws.com"),
    }
    if account is not None:
        pseudo["AWS::AccountId"] = account
    if isinstance(value, str):
        return value
    if not isinstance(value, Mapping) or len(value) != 1:
        return None
    ((key, arg),) = value.items()
    if key == "Ref":
        return pseudo.get(arg) if isinstance(arg, str) else None
    if (
        key == "Fn::Join"
        and isinstance(arg, list)
        and len(arg) == 2
        and isinstance(arg[0], str)
        and isinstance(arg[1], list)
    ):
        parts = [render(part, region=region, partition=partition, account=account) for part in arg[1]]
        return None if any(p is None for p in parts) else arg[0].join(p for p in parts if p is not None)
    if key == "Fn::Sub" and isinstance(arg, str):
        missing = False

        def substitute(match: re.Match[str]) -> str:
            nonlocal missing
            if match.group(1) in pseudo:
                return pseudo[match.group(1)]
            missing = True
            return ""

        text = re.sub(r"\$\{([^}!]+)\}", substitute, arg)
        return None if missing else text
    return None


def values_at(resource: Mapping[str, Any], *path: str) -> Iterable[Any]:
    """Values under ``Properties`` at ``path``; ``*`` walks a list."""
    current: list[Any] = [resource.get("Properties", {})]
    for part in path:
        following: list[Any] = []
        for item in current:
            if part == "*" and isinstance(item, list):
                following.extend(item)
            elif isinstance(item, Mapping) and part in item:
                following.append(item[part])
        current = following
    return current

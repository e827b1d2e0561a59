"""Architecture diagram of a synthesized app, as a Mermaid flowchart, generated from cdk.out.

Usage: ``python -m tools.diagram cdk.out [--readme docs/architecture.md]``

Reads every stack template of the cloud assembly (nested stacks included), keeps the
resources a reader cares about (endpoints, models, functions, tables, buckets, state
machines, alarms topics, ...), groups them by their top-level construct, and draws an
edge wherever one refers to another (``Ref``/``GetAtt``/``Fn::Sub``). CDK's own machinery
is left out (provider frameworks and their waiter state machine, log-retention functions,
bucket-notification handlers, custom-resource providers, singletons named by a hash), an
edge through it joins its two ends (custom resource -> its handler), and labels lose CDK's
hash suffix. Many adapters in a
nested stack collapse into one node. With ``--readme`` the block between the
``<!-- diagram:start -->`` and ``<!-- diagram:end -->`` markers is replaced, so the README
always shows the app as synthesized, never a drawing made by hand.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

START, END = "<!-- diagram:start -->", "<!-- diagram:end -->"

SHOWN: dict[str, str] = {
    "AWS::SageMaker::Endpoint": "SageMaker endpoint",
    "AWS::SageMaker::EndpointConfig": "Endpoint config",
    "AWS::SageMaker::Model": "SageMaker model",
    "AWS::SageMaker::InferenceComponent": "Inference component",
    "AWS::ApplicationAutoScaling::ScalableTarget": "Copy autoscaling",
    "AWS::Lambda::Function": "Lambda",
    "AWS::Lambda::Url": "Function URL (IAM)",
    "AWS::DynamoDB::Table": "DynamoDB table",
    "AWS::S3::Bucket": "S3 bucket",
    "AWS::SNS::Topic": "SNS topic",
    "AWS::StepFunctions::StateMachine": "State machine",
    "AWS::Scheduler::Schedule": "Schedule",
    "AWS::Events::Rule": "EventBridge rule",
    "AWS::CloudWatch::Dashboard": "Dashboard",
    "AWS::SSM::Parameter": "SSM parameter",
    "AWS::KMS::Key": "KMS key",
    "AWS::CloudFormation::Stack": "Nested stack",
}
CUSTOM = "Custom resource"

INTERNAL_SEGMENT = re.compile(
    r"^(framework-(onEvent|isComplete|onTimeout)|waiter-state-machine|LogRetention[0-9a-f]{32}|"
    r"BucketNotificationsHandler[0-9a-f]{32}|Custom(::)?[A-Za-z0-9]*CustomResourceProvider|.*[0-9a-f]{32}.*)$"
)
"""Construct ids of CDK's own machinery: custom-resource provider frameworks and their waiter state machine,
log-retention functions, the bucket-notifications handler, custom-resource providers, and singletons named by a
hash (``AWS679f53fac002430cb0da5b7982bd2287``, ``SingletonLambda<hash>``)."""
INTERNAL_TYPES = frozenset(
    {
        "Custom::LogRetention",
        "Custom::S3BucketNotifications",
        "Custom::S3AutoDeleteObjects",
        "Custom::VpcRestrictDefaultSG",
        "Custom::CrossRegionExportWriter",
        "Custom::CrossRegionExportReader",
        "Custom::CDKBucketDeployment",
    }
)
"""Custom resources CDK adds to implement a feature (log retention, bucket notifications, ...), not the system."""
_HASH_SUFFIX = re.compile(r"(?<=[a-z0-9])[0-9A-F]{8}$")


def is_internal(resource_type: str, path: str) -> bool:
    """True for a resource of CDK's own machinery (see ``INTERNAL_SEGMENT``, ``INTERNAL_TYPES``)."""
    if resource_type in INTERNAL_TYPES or any(resource_type.startswith(t) for t in INTERNAL_TYPES):
        return True
    return any(INTERNAL_SEGMENT.match(part) for part in path.split("/"))


COLLAPSE_AT = 5
"""Inference components of one kind in one nested stack above this count become one node."""


@dataclass
class Node:
    key: str
    label: str
    group: str
    refs: set[str] = field(default_factory=set)
    internal: bool = False


def _templates(assembly: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    manifest = json.loads((assembly / "manifest.json").read_text())
    for name, artifact in sorted(manifest["artifacts"].items()):
        if artifact["type"] != "aws:cloudformation:stack":
            continue
        template_file = artifact["properties"]["templateFile"]
        yield name, json.loads((assembly / template_file).read_text())
    for nested in sorted(assembly.glob("*.nested.template.json")):
        yield nested.name.removesuffix(".nested.template.json"), json.loads(nested.read_text())


def _refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "Ref" and isinstance(inner, str):
                yield inner
            elif key == "Fn::GetAtt":
                target = inner[0] if isinstance(inner, list) else str(inner).split(".")[0]
                yield target
            elif key == "Fn::Sub":
                text = inner[0] if isinstance(inner, list) else inner
                yield from (m.split(".")[0] for m in re.findall(r"\$\{([^}!]+)\}", text))
                if isinstance(inner, list):
                    yield from _refs(inner[1])
            else:
                yield from _refs(inner)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def _group(path: str, stack: str) -> str:
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2:
        return parts[1]
    return stack


def _tail(path: str) -> str:
    """The construct id a reader knows: the last part of the path, without CDK's hash suffix or nested-stack suffix."""
    parts = [p for p in path.split("/") if p and p != "Resource" and p != "Default"]
    tail = (parts[-1] if parts else path).removesuffix(".NestedStackResource").removesuffix(".NestedStack")
    return _HASH_SUFFIX.sub("", tail) or tail


def collect(assembly: Path) -> dict[str, Node]:
    """The diagram's nodes: what a reader cares about, CDK's own machinery left out (``is_internal``); an edge
    through a left-out resource (custom resource -> provider framework -> handler) joins its two ends."""
    nodes = _collect_all(assembly)
    hidden = {key for key, node in nodes.items() if node.internal}
    for key in hidden:
        through = nodes[key].refs - {key}
        for node in nodes.values():
            if key in node.refs:
                node.refs.discard(key)
                node.refs |= through - {node.key}
    # Contraction can leave refs to other hidden nodes (chains): repeat until none remain.
    while any(r in hidden for n in nodes.values() for r in n.refs):
        for node in nodes.values():
            for ref in [r for r in node.refs if r in hidden]:
                node.refs.discard(ref)
                node.refs |= nodes[ref].refs - {node.key}
    return {key: node for key, node in nodes.items() if key not in hidden}


def _collect_all(assembly: Path) -> dict[str, Node]:
    nodes: dict[str, Node] = {}
    for stack, template in _templates(assembly):
        resources = template.get("Resources", {})
        kept = {
            logical_id: resource
            for logical_id, resource in resources.items()
            if resource.get("Type") in SHOWN or str(resource.get("Type", "")).startswith("Custom::")
        }
        components = [
            lid
            for lid, r in kept.items()
            if r["Type"] == "AWS::SageMaker::InferenceComponent"
            and "BaseInferenceComponentName" in r.get("Properties", {}).get("Specification", {})
        ]
        collapse = len(components) > COLLAPSE_AT
        for logical_id, resource in kept.items():
            kind = resource["Type"]
            path = resource.get("Metadata", {}).get("aws:cdk:path", logical_id)
            key = f"{stack}.{logical_id}"
            if collapse and logical_id in components:
                key = f"{stack}.adapters"
                label = f"{len(components)} LoRA adapter components"
            else:
                what = SHOWN.get(kind, CUSTOM if kind.startswith("Custom::") else kind)
                if kind == "AWS::SageMaker::InferenceComponent" and "BaseInferenceComponentName" in resource.get(
                    "Properties", {}
                ).get("Specification", {}):
                    what = "LoRA adapter"
                label = f"{what}: {_tail(path)}"
            node = nodes.setdefault(key, Node(key, label, _group(path, stack), internal=is_internal(kind, path)))
            node.refs.update(f"{stack}.{r}" for r in _refs(resource.get("Properties", {})) if r in kept)
            if collapse:
                node.refs = {f"{stack}.adapters" if r.split(".", 1)[1] in components else r for r in node.refs}
    return nodes


def mermaid(nodes: dict[str, Node]) -> str:
    ids = {key: f"n{index}" for index, key in enumerate(sorted(nodes))}
    groups: dict[str, list[Node]] = defaultdict(list)
    for node in nodes.values():
        groups[node.group].append(node)
    lines = ["flowchart LR"]
    for index, (group, members) in enumerate(sorted(groups.items())):
        lines.append(f'  subgraph g{index}["{group}"]')
        for node in sorted(members, key=lambda n: n.label):
            lines.append(f'    {ids[node.key]}["{node.label}"]')
        lines.append("  end")
    edges = sorted({(ids[n.key], ids[r]) for n in nodes.values() for r in n.refs if r in ids and r != n.key})
    lines.extend(f"  {a} --> {b}" for a, b in edges)
    return "\n".join(lines)


def render(assembly: Path) -> str:
    return "```mermaid\n" + mermaid(collect(assembly)) + "\n```"


def update_readme(readme: Path, block: str) -> bool:
    text = readme.read_text(encoding="utf-8")
    if START not in text or END not in text:
        raise SystemExit(f"{readme}: add the markers {START} and {END} where the diagram goes")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{START}\n{block}\n{END}{tail}"
    changed = new != text
    readme.write_text(new, encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("assembly", nargs="?", default="cdk.out")
    parser.add_argument("--readme", help="replace the diagram block in this file")
    args = parser.parse_args(argv)
    assembly = Path(args.assembly)
    if not (assembly / "manifest.json").exists():
        print(f"{assembly}: no cloud assembly; run `make synth` first", file=sys.stderr)
        return 1
    block = render(assembly)
    if args.readme:
        changed = update_readme(Path(args.readme), block)
        print(f"{args.readme}: diagram {'updated' if changed else 'already current'}")
    else:
        print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
